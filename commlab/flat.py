"""One flat buffer for many tensors: what goes on the wire is one contiguous vector."""
from __future__ import annotations

import torch


def flatten(tensors) -> torch.Tensor:
    """Concatenate tensors into one 1-D buffer (a copy)."""
    tensors = list(tensors)
    if not tensors:
        return torch.zeros(0)
    return torch.cat([t.reshape(-1) for t in tensors])


def unflatten_into(flat: torch.Tensor, tensors) -> None:
    """Copy consecutive slices of ``flat`` back into ``tensors`` (in place)."""
    tensors = list(tensors)
    total = sum(t.numel() for t in tensors)
    if total != flat.numel():  # check first: a short buffer must not half-overwrite the tensors
        raise ValueError(f"flat buffer has {flat.numel()} elements but the tensors hold {total}")
    offset = 0
    for t in tensors:
        n = t.numel()
        t.copy_(flat[offset:offset + n].view_as(t))
        offset += n


def grads(model: torch.nn.Module) -> list[torch.Tensor]:
    """The gradients of a model's trainable parameters (zeros where a parameter got none)."""
    out = []
    for p in model.parameters():
        if p.requires_grad:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            out.append(p.grad)
    return out
