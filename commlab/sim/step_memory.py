"""What one training step holds in memory, measured: parameters, gradients and activations.

A data-parallel worker holds, at the peak of a step (just before backward starts):

* its **parameters** (P bytes) and, from the second step on, their **gradients** (P bytes);
* the **optimizer state**: none for plain SGD, P for momentum, 2P for Adam (fp32);
* the **activations** autograd saved in forward for backward.

The first two are counted from the parameters. The activations are measured without any device
counter: a ``torch.autograd.graph.saved_tensors_hooks`` pair sees every tensor forward saves;
their storages are counted once each (a view of a storage counted before adds nothing), and a
parameter's own storage is not an activation. On a GPU, the allocator's peak over the step is read
as well (``torch.cuda.max_memory_allocated`` minus what was allocated before the step), which also
includes what saved-tensor counting cannot see: temporary buffers of kernels (cuDNN's workspaces),
and gradients being built during backward while activations are still alive.

Cost: one forward and backward of the model.
"""
from __future__ import annotations

import torch

OPTIMIZER_STATE = {"sgd": 0, "momentum": 1, "adam": 2}  # copies of the parameters each keeps


def step_memory(model: torch.nn.Module, call, loss, params) -> dict:
    """Bytes one step of ``call`` (forward) and ``loss(out).backward()`` holds, as a dict:
    parameters, gradients, activations (saved for backward), and on a GPU peak_step (the
    allocator's peak above what was held before the step) and how each was measured."""
    held = {p.untyped_storage().data_ptr() for p in model.parameters()}
    held |= {b.untyped_storage().data_ptr() for b in model.buffers()}
    saved: dict[int, int] = {}

    def pack(t):
        if t.device.type != "meta":
            storage = t.untyped_storage()
            if storage.data_ptr() not in held:
                saved[storage.data_ptr()] = storage.nbytes()
        return t

    cuda = params[0].device.type == "cuda"
    model.zero_grad(set_to_none=True)
    if cuda:
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = loss(call())
    out.backward()
    nbytes = sum(p.numel() * p.element_size() for p in params)
    memory = {"parameters": nbytes, "gradients": nbytes, "activations": sum(saved.values()),
              "measured": "activations: storages of the tensors autograd saved for backward, each once"}
    if cuda:
        torch.cuda.synchronize()
        memory["peak_step"] = torch.cuda.max_memory_allocated() - before
        memory["measured"] += "; peak_step: torch.cuda.max_memory_allocated over the step, less what was held before"
    model.zero_grad(set_to_none=True)
    return memory


def per_worker(memory: dict, optimizer: str = "momentum") -> dict:
    """The bytes one data-parallel worker holds with ``optimizer`` (sgd, momentum, adam): each
    part and their ``total`` (parameters + gradients + optimizer state + activations)."""
    if optimizer not in OPTIMIZER_STATE:
        raise ValueError(f"optimizer={optimizer!r} is not one of {', '.join(OPTIMIZER_STATE)}")
    parts = {"parameters": memory["parameters"], "gradients": memory["gradients"],
             "optimizer": OPTIMIZER_STATE[optimizer] * memory["parameters"],
             "activations": memory["activations"]}
    return {**parts, "total": sum(parts.values())}


def zero_worker(memory: dict, workers: int, stage: int, optimizer: str = "momentum") -> float:
    """Bytes one of ``workers`` ZeRO workers holds at ``stage`` (Rajbhandari et al., SC 2020):
    stage 1 shards the optimizer state, 2 the gradients too, 3 the parameters too, each 1/workers
    of it per worker; the activations stay whole (every worker runs its own samples)."""
    if stage not in (1, 2, 3):
        raise ValueError(f"stage={stage!r} is not a ZeRO stage; valid: 1, 2, 3")
    parts = per_worker(memory, optimizer)
    sharded = ("optimizer", "gradients", "parameters")[:stage]
    return sum(v / workers if k in sharded else v for k, v in parts.items() if k != "total")
