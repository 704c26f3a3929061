"""The wire form every sparsifier shares (top-k, threshold, DGC, gTop-k), and a fast exact
top-k selection.

A sparse payload is two parts: ``"idx"``, the flat positions of the kept coordinates, and
``"val"``, their values in the tensor's own dtype. Index width depends on the number of
coordinates d of the tensor:

=====================  ==========================================  ===========
d                      stored as                                   bytes/index
=====================  ==========================================  ===========
d <= 65536             int16, position - 32768 (uint16 by offset)  2
65536 < d <= 2**31     int32                                       4
d > 2**31              int64                                       8
=====================  ==========================================  ===========

(the wire dtypes have no uint16, so positions 0..65535 travel as int16 shifted by 32768).
A payload of k coordinates of an n-dimensional tensor is therefore exactly

    header_bytes(n, ["idx", "val"]) + k (index bytes + value bytes)

bytes, with a 26-byte header for a 1-D tensor: :func:`sparse_nbytes`.

:func:`topk_indices` returns the positions of the k largest entries of a non-negative
vector, as ``torch.topk`` would (ties broken arbitrarily), but several times faster for
large d and small k: it estimates from a random sample a threshold that about 1.5 k
entries exceed, keeps those candidates (one comparison and :func:`positions`), and runs
``torch.topk`` on the candidates only. The candidates contain every top-k entry whenever
there are at least k of them; otherwise (rare: the margin is many standard deviations of
the sample estimate) it falls back to ``torch.topk`` on the whole vector. The result is
exact in both cases; DGC (Lin et al. 2018) estimates its threshold from a sample the same way.
This is the CPU's path, whose ``torch.topk`` sorts; on a GPU ``torch.topk`` is a radix select
over the whole vector, which the sample's extra kernels and host syncs would only slow down.

Which path runs is :func:`commlab.compress.bitpack._fused`'s choice, the one switch between the
CPU's and a GPU's kernels (a test makes the CPU take the GPU's path by patching it).
On the CPU, positions come from numpy's ``flatnonzero`` (:func:`positions`) and values are
gathered with ``index_select`` and placed with ``scatter_`` (:func:`densify`): each several
times faster than torch's ``nonzero``, ``x[idx]`` and ``index_put_`` on millions of entries.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from . import bitpack
from .base import Payload, header_bytes

OFFSET16 = 32768
SAMPLE = 1 << 17  # largest sample for the threshold estimate
PARTS = ("idx", "val")


def index_dtype(d: int) -> torch.dtype:
    """The narrowest wire dtype that addresses d coordinates (see the module table)."""
    return torch.int16 if d <= 1 << 16 else torch.int32 if d <= 1 << 31 else torch.int64


def index_bytes(d: int) -> int:
    """Bytes per index on the wire for a tensor of d coordinates: 2, 4 or 8."""
    return torch.empty((), dtype=index_dtype(d)).element_size()


def encode_indices(idx: torch.Tensor, d: int) -> torch.Tensor:
    """Positions in :func:`index_dtype`'s dtype (int16 shifted by -32768 when d <= 65536)."""
    dt = index_dtype(d)
    return (idx - OFFSET16).to(dt) if dt == torch.int16 else idx.to(dt)


def decode_indices(idx: torch.Tensor, d: int) -> torch.Tensor:
    """int64 positions from the wire form."""
    idx = idx.to(torch.int64)
    return idx + OFFSET16 if index_dtype(d) == torch.int16 else idx


def sparse_nbytes(shape, k: int, dtype: torch.dtype) -> int:
    """Exact wire size of a sparse payload holding k values of a tensor of ``shape`` and ``dtype``."""
    d = math.prod(shape)
    value = torch.empty((), dtype=dtype).element_size()
    return header_bytes(len(shape), PARTS) + k * (index_bytes(d) + value)


def sparse_payload(idx: torch.Tensor, values: torch.Tensor, shape, dtype) -> Payload:
    """Payload of the flat positions ``idx`` (int64) and their ``values`` for a tensor of shape."""
    d = math.prod(shape)
    return Payload({"idx": encode_indices(idx, d), "val": values.to(dtype)}, shape, dtype)


def densify(p: Payload, out_dtype=None) -> torch.Tensor:
    """The dense tensor of a sparse payload (zeros where nothing was sent)."""
    d, val = p.numel, p.parts.get("val")  # a skip payload (no parts) means all zeros
    out = torch.zeros(d, dtype=out_dtype or p.dtype, device=val.device if val is not None else "cpu")
    if val is not None and val.numel():
        out.scatter_(0, decode_indices(p["idx"], d), val.to(out.dtype))  # faster than index_put_
    return out.view(p.shape)


def positions(mask: torch.Tensor) -> torch.Tensor:
    """The flat positions (int64, ascending) where the bool tensor ``mask`` is True: ``nonzero``,
    on the CPU by numpy's ``flatnonzero`` (several times faster than torch's)."""
    if not bitpack._fused(mask.device):
        return torch.from_numpy(np.flatnonzero(mask.reshape(-1).numpy()))
    return mask.reshape(-1).nonzero().squeeze(1)


def topk_indices(a: torch.Tensor, k: int, seed: int = 0) -> torch.Tensor:
    """Positions (int64, unsorted) of the k largest entries of the non-negative 1-D tensor ``a``."""
    d = a.numel()
    if k >= d:
        return torch.arange(d, device=a.device)
    if k <= 0:
        return torch.zeros(0, dtype=torch.int64, device=a.device)
    if d < 1 << 19 or bitpack._fused(a.device):  # a GPU's topk is a radix select: no sample to beat it
        return torch.topk(a, k, sorted=False).indices
    m = min(d >> 5, SAMPLE)  # 1/32 of the entries, at most 2^17
    frac = max(1.5 * k / d, 64 / m)  # aim at 1.5 k candidates, and at least 64 sample points above
    if frac >= 0.25:
        return torch.topk(a, k, sorted=False).indices
    g = torch.Generator(device=a.device).manual_seed(seed)
    sample = a[torch.randint(0, d, (m,), generator=g, device=a.device)].float()
    thr = sample.kthvalue(max(1, int(m * (1 - frac)))).values.to(a.dtype)
    cand = positions(a >= thr)
    if cand.numel() < k:
        return torch.topk(a, k, sorted=False).indices
    if cand.numel() == k:
        return cand
    return cand[torch.topk(a.index_select(0, cand), k, sorted=False).indices]


def check_sparse(p: Payload, who: str) -> None:
    """A payload decoded by a sparsifier must hold "idx" and "val" parts of equal length."""
    if p.parts and (set(p.parts) != set(PARTS) or p["idx"].numel() != p["val"].numel()):
        raise ValueError(f"{who}: expected a sparse payload with parts 'idx' and 'val' of equal length, "
                         f"got parts {sorted(p.parts)}")
