"""What each layer of a step does, operator by operator: FLOPs and bytes, forward and backward.

A measured time says how long a layer took on the device at hand; to put the layer on another
device (:mod:`commlab.sim.to_device`) we need what it *does*. :func:`trace_ops` runs one step under
a ``TorchDispatchMode`` that sees every ATen operator, forward and backward, and records for each
its kind (a convolution, another matrix product, or the rest), the FLOPs (PyTorch's own FLOP formulas, :data:`torch.utils.flop_counter.flop_registry`: matrix
products, convolutions, attention; 0 for the rest) and the bytes it reads and writes (its tensor
inputs and outputs; an operator whose output is a view of an input moves nothing and launches no
kernel, and is left out).

Each operator belongs to a layer by the rule the timing uses (:mod:`commlab.sim.measured`):
forward, the operators after layer l-1's forward hook up to layer l's (the loss goes to the last
layer); backward, those after layer l+1's last gradient landed up to layer l's (what autograd does
after layer 0 goes to layer 0). So parameter-free work (a ReLU, a pooling, a residual add) counts
toward the layer after it, as its time does.

Cost: one forward and backward of the model, with a Python call per operator.
"""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import flop_registry

from ..schedule.profile import layer_holders


OTHER, MATMUL, CONV = 0, 1, 2  # an operator's kind: the rate its FLOPs run at on a GPU differs


def _tensors(tree) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def _storage(t: torch.Tensor):
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # a tensor without storage (sparse, meta-like)
        return None


class _Recorder(TorchDispatchMode):
    """Each operator's (flops, bytes) appended to the current layer's list of this phase."""

    def __init__(self, layers: int):
        super().__init__()
        self.ops = {"forward": [[] for _ in range(layers)], "backward": [[] for _ in range(layers)]}
        self.phase, self.layer = "forward", 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs, outputs = _tensors((args, kwargs)), _tensors(out)
        if not outputs:
            return out
        seen = {_storage(t) for t in inputs}
        if all(_storage(t) in seen for t in outputs):  # a view (or an in-place op's returned alias) ...
            if func._schema.is_mutable is False:        # ... of an input: no kernel, no bytes
                return out
        packet = func._overloadpacket
        flops = float(flop_registry[packet](*args, **kwargs, out_val=out)) if packet in flop_registry else 0.0
        moved = sum(t.numel() * t.element_size() for t in inputs + outputs)
        kind = CONV if "conv" in str(packet) else MATMUL if flops else OTHER
        self.ops[self.phase][self.layer].append([flops, float(moved), kind])  # lists: as JSON gives them back
        return out


def trace_ops(model, call, loss, names, positions, params) -> dict:
    """{"forward": per layer a list of (flops, bytes, kind) per operator (kind: :data:`OTHER`,
    :data:`MATMUL` or :data:`CONV`), "backward": the same} of one
    step of ``call`` and ``loss(out).backward()``; layers as ``names`` (forward order) and their
    parameters' indices ``positions`` into ``params``."""
    modules = dict(model.named_modules())
    L = len(names)
    rec = _Recorder(L)
    left = [len(ps) for ps in positions]

    def finished_forward(l):
        def hook(module, args, out=None):
            if not done[l]:  # a module called again: its later calls' operators go to the layer after them
                done[l] = True
                rec.layer = min(l + 1, L - 1)
        return hook

    def landed(l):
        def hook(param):
            left[l] -= 1
            if left[l] == 0:
                rec.layer = max(l - 1, 0)
        return hook

    holders, done = layer_holders(model), [False] * L
    handles = [modules[n].register_forward_pre_hook(finished_forward(l)) if n in holders
               else modules[n].register_forward_hook(finished_forward(l)) for l, n in enumerate(names)]
    handles += [params[i].register_post_accumulate_grad_hook(landed(l)) for l, ps in enumerate(positions) for i in ps]
    model.zero_grad(set_to_none=True)
    try:
        with rec:
            out = loss(call())
            rec.phase, rec.layer = "backward", L - 1
            out.backward()
    finally:
        for h in handles:
            h.remove()
        model.zero_grad(set_to_none=True)
    return rec.ops


def totals(ops: dict) -> dict:
    """Per phase, per layer: (operators, FLOPs, bytes)."""
    return {phase: [(len(layer), sum(op[0] for op in layer), sum(op[1] for op in layer)) for layer in layers]
            for phase, layers in ops.items()}
