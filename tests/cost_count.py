"""Count what a compressor's encode and decode would launch on a GPU, from the aten ops they
dispatch on CPU tensors with the GPU's code paths forced (``gpu_paths``): the oracle that
:mod:`commlab.compress.cost`'s hand-written declarations are checked against.

An op that only changes metadata (a view, a slice, a reshape, a dtype view, detach, a python
scalar wrapped as a tensor, an allocation without a fill) costs nothing. Every other op is one
launch, and its memory traffic is the bytes of its tensor inputs plus its outputs, except:

* gathers (index_select, advanced indexing, gather) read only the entries they return: index
  + output bytes + the bytes read, the output's or, from a small table that stays in cache, at
  most the table's;
* scatters (index_put_, index_fill_, index_copy_, index_add_, scatter_) write only where the
  index points: index + values + the entries written;
* copy_ and fill_ read their source (if any) and write the destination, without reading it;
  new_zeros, zeros_like and their kind only write (their input gives the shape);
* a host tensor of one or more elements made on the host (``lift_fresh``, ``torch.tensor([..])``)
  is a copy to the device: a launch and, not asked to be asynchronous, a sync.

A sync is a host round trip: ``_local_scalar_dense`` (``.item()``, ``float(t)``, ``bool(t)``),
``nonzero`` and ``unique`` (the host must learn the size of the output), indexing with a
boolean mask (a nonzero inside, on a GPU), the copy above.
A selection is the elements ``topk`` or ``kthvalue`` run over; flops are counted for matrix
products (2 m n k) and, by their textbook counts, QR (4 m n^2) and the symmetric eigendecomposition (9 n^3).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from commlab.compress import bitpack

aten = torch.ops.aten

FREE = {"view", "_unsafe_view", "slice", "select", "as_strided", "t", "transpose", "permute", "detach", "alias",
        "expand", "squeeze", "unsqueeze", "unbind", "split", "split_with_sizes", "scalar_tensor", "empty",
        "empty_strided", "empty_like", "new_empty", "new_empty_strided", "_reshape_alias", "view_as_real",
        "_local_scalar_dense", "lift_fresh", "set_", "resize_", "promote_types"}
GATHERS = {"index_select", "index", "gather", "take"}
SCATTERS = {"index_put_", "index_put", "index_fill_", "index_copy_", "index_add_", "scatter_", "scatter_add_",
            "scatter", "index_fill", "index_add", "index_copy"}
WRITES_ONLY = {"copy_", "fill_", "zero_"}
TEMPLATES = {"new_zeros", "new_ones", "new_full", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like"}
SYNCS = {"_local_scalar_dense", "nonzero", "_unique2", "unique_dim", "unique_consecutive", "masked_select"}
SELECTS = {"topk", "kthvalue"}
MATMULS = {"mm", "addmm", "bmm", "matmul"}


def _nbytes(t: torch.Tensor) -> int:
    """Bytes of a tensor; a broadcast one (expand: stride 0) is read once, its storage."""
    try:
        stored = t.untyped_storage().nbytes()
    except (NotImplementedError, RuntimeError):
        stored = t.numel() * t.element_size()
    return min(t.numel() * t.element_size(), stored)


@dataclass
class Count:
    """What a block of code launched: ``passes`` over ``numel`` fp32 elements (bytes / 4 numel)."""

    numel: int
    launches: int = 0
    bytes: int = 0
    select: float = 0.0
    syncs: int = 0
    flops: float = 0.0
    ops: list = field(default_factory=list)

    @property
    def passes(self) -> float:
        return self.bytes / (4 * self.numel)

    def __str__(self) -> str:
        return (f"passes {self.passes:.3g}, launches {self.launches}, select {self.select:.3g}, "
                f"syncs {self.syncs}, flops {self.flops:.3g}")


class Counter(TorchDispatchMode):
    """Counts launches, bytes, selection and syncs of every aten op dispatched inside it."""

    def __init__(self, numel: int):
        super().__init__()
        self.count = Count(numel)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.__name__.split(".")[0]
        ins = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        outs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
        c = self.count
        if name in SYNCS or (name in ("index", "index_put_", "index_put") and any(
                a.dtype == torch.bool for a in ins[1:])):  # a boolean mask: nonzero on a GPU
            c.syncs += 1
        if name == "lift_fresh" and ins and ins[0].numel() > 1:  # a host list copied to the device
            c.launches, c.syncs, c.bytes = c.launches + 1, c.syncs + 1, c.bytes + _nbytes(ins[0])
            c.ops.append((name, _nbytes(ins[0])))
            return out
        if name in FREE:
            return out
        if name in GATHERS:
            out_bytes = sum(_nbytes(o) for o in outs)
            moved = sum(_nbytes(a) for a in ins[1:]) + out_bytes + min(out_bytes, _nbytes(ins[0]))
        elif name in SCATTERS:
            index = [a for a in ins[1:] if not a.is_floating_point()]
            written = max((a.numel() for a in index), default=0) * ins[0].element_size()
            moved = sum(_nbytes(a) for a in ins[1:]) + written
            if not name.endswith("_"):  # out of place: a copy of self first
                moved += 2 * _nbytes(ins[0])
        elif name in TEMPLATES:  # the input only says shape, dtype and device
            moved = sum(_nbytes(o) for o in outs)
        elif name in WRITES_ONLY:
            moved = sum(_nbytes(a) for a in ins[1:]) + _nbytes(ins[0])
        else:
            moved = sum(_nbytes(a) for a in ins) + sum(_nbytes(o) for o in outs)
        if name in SELECTS:
            c.select += ins[0].numel()
        if name in MATMULS:
            a, b = ins[-2], ins[-1]
            c.flops += 2 * math.prod(a.shape) * b.shape[-1]
        elif name == "linalg_qr":  # Householder QR and forming Q: about 4 m n^2
            c.flops += 4 * ins[0].shape[-2] * ins[0].shape[-1] ** 2
        elif name == "_linalg_eigh":  # symmetric eigenvalues and vectors: about 9 n^3 (Golub and Van Loan)
            c.flops += 9 * ins[0].shape[-1] ** 3
        c.launches += 1
        c.bytes += moved
        c.ops.append((name, moved))
        return out


def gpu_paths(monkeypatch):
    """Every device takes the GPU's code path (bit packing's fused kernels, torch's topk and
    nonzero; no numpy), as tests/test_bitpack.py's ``gpu_kernels`` does."""
    monkeypatch.setattr(bitpack, "_fused", lambda device: True)


def count(fn, numel: int) -> Count:
    """The Count of calling ``fn()``, in passes over ``numel`` fp32 elements."""
    with Counter(numel) as counter:
        fn()
    return counter.count


def encode_decode(c, x: torch.Tensor):
    """(encode, decode) of compressor ``c`` on x as the library's aggregation runs them, as two
    functions to count, after a first round that builds any state (momentum, residuals, shifts):
    ``summable``/``from_summed`` for "sum" compressors, the scaler and ``compress`` for TernGrad's
    shared scale, else ``compress``/``decompress``. The counted round gets -x, so that a
    compressor that may skip (LAQ) sends. gTop-k's tree (protocol "gtopk") is one function,
    ``aggregate`` with a tree that returns this rank's own entries: (that, None)."""
    key = "k"
    y = -x
    if c.protocol == "gtopk":
        c.aggregate(x, key, lambda idx, val, *a: (idx, val), 1)
        return (lambda: c.aggregate(y, key, lambda idx, val, *a: (idx, val), 1)), None
    if c.aggregation == "sum" and c.protocol is None:
        c.from_summed(c.summable(x, key), x, 4)
        held = {}
        return (lambda: held.setdefault("s", c.summable(y, key))), (lambda: c.from_summed(held["s"], y, 4))
    kw = {}
    if c.protocol == "shared_scale":
        kw = {"scale": c.local_scale(y)}
    c.decompress(c.compress(x, key, **kw))
    held = {}

    def encode():
        if kw:
            c.local_scale(y)
        held["p"] = c.compress(y, key, **kw)
    return encode, (lambda: c.decompress(held["p"]))
