"""Counting a model: parameters D, training FLOPs per sample C, and model intensity I = C / D.

Model intensity follows Shi, Tang, Chu, Liu, Wang and Li, "A Quantitative Survey of
Communication Optimizations in Distributed Deep Learning" (IEEE Network 35(3), 2021): a step
of data-parallel SGD computes ``C * batch`` FLOPs per worker and all-reduces ``D`` gradients,
so a low intensity means communication is hard to hide behind computation.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

# Figures from Shi et al. (IEEE Network 2021) as relayed to us: BERT-Large has 336M
# parameters, i.e. 1.34 GB of fp32 gradients per step, and the intensities are about
# 470, 249 and 248. We could not find the paper's text to confirm them, nor how it
# counted C; the order ResNet-50, BERT-Base, BERT-Large is our assumption.
SURVEY_FIGURES: dict[str, dict[str, float]] = {
    "resnet50": {"params": 25.6e6, "intensity": 470.0, "gradient_bytes": 4 * 25.6e6},
    "bert-base": {"params": 110e6, "intensity": 249.0, "gradient_bytes": 4 * 110e6},
    "bert-large": {"params": 336e6, "intensity": 248.0, "gradient_bytes": 4 * 336e6},
}


def count_params(model: nn.Module) -> int:
    """Number of parameters (shared/tied tensors counted once); works on ``meta``."""
    return sum(p.numel() for p in model.parameters())


def floating_tensors(out) -> list[torch.Tensor]:
    """The floating-point tensors of a model's output: a tensor, or those inside a tuple, list,
    dict or model output, in order."""
    if isinstance(out, torch.Tensor):
        return [out] if out.is_floating_point() else []
    if isinstance(out, Mapping):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in floating_tensors(o)]
    return []


def flops_per_sample(model: nn.Module, example_input, backward: bool = True) -> float:
    """FLOPs of one forward (and backward) pass divided by the batch size.

    ``example_input`` is a batched tensor or a dict of keyword tensors (the batch size is
    read from the first dimension of the first one). Counting uses
    ``torch.utils.flop_counter.FlopCounterMode``, which only counts matrix-multiply-like
    ops (mm, addmm, bmm, convolution, scaled-dot-product attention) at 2 FLOPs per
    multiply-accumulate; element-wise ops, normalisation, activations, pooling and
    embedding lookups count as zero. Floating-point inputs are made to require grad, so
    the backward pass computes both input and weight gradients and costs 2x the forward
    (the usual "training = 3x forward" convention; a real first layer skips its input
    gradient, a few percent less). Meta-device models and inputs work. The model is
    left as it was: the pass runs in eval mode (so BatchNorm running statistics are not
    updated; the count is the same) and existing ``.grad`` tensors are restored.
    """
    def prepare(t):
        grad = isinstance(t, torch.Tensor) and t.is_floating_point()
        return t.detach().requires_grad_(True) if grad else t

    named = example_input if isinstance(example_input, Mapping) else {"": example_input}
    batch = next(iter(named.values())).shape[0]
    kwargs = {k: prepare(v) for k, v in named.items()}
    args = (kwargs.pop(""),) if "" in kwargs else ()
    modes = {m: m.training for m in model.modules()}
    grads = {p: p.grad for p in model.parameters()}
    model.eval()
    model.zero_grad(set_to_none=True)
    counter = FlopCounterMode(display=False)
    try:
        with torch.enable_grad(), counter:
            out = model(*args, **kwargs)
            if backward:
                sum(t.float().sum() for t in floating_tensors(out)).backward()
    finally:
        for m, training in modes.items():
            m.training = training
        for p, g in grads.items():
            p.grad = g
    return counter.get_total_flops() / batch


@dataclasses.dataclass(frozen=True)
class ModelStats:
    """Parameters ``D``, training FLOPs per sample ``C``, intensity ``I = C / D``, and
    the fp32 gradient size all-reduced each step (``4 * D`` bytes)."""

    name: str
    params: int
    flops_per_sample: float
    intensity: float
    gradient_bytes: int
    input: str
