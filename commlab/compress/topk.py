"""Top-k sparsification (Aji and Heafield 2017, "Sparse Communication for Distributed
Gradient Descent"; Stich, Cordonnier and Jaggi 2018, "Sparsified SGD with Memory").

Keep the k = round(ratio d) coordinates of largest magnitude (at least one), zero the rest:

    C(x)_i = x_i if |x_i| is among the k largest of |x|, else 0.

Biased, and a contraction: the dropped coordinates are the d - k smallest, whose mean
square is at most the mean square of all, so

    ||x - C(x)||^2 <= (1 - k/d) ||x||^2,

which is what error feedback needs to converge (use ``"topk(0.01)+ef"``). Payloads cannot
be added in compressed form (each rank keeps other coordinates): aggregation "gather".

Wire: the positions and values of the k coordinates (:mod:`commlab.compress.sparse`),
``header + k (2 or 4 + value bytes)``; for fp32 and d > 65536 that is 8 bytes per kept
coordinate, so top-k saves bandwidth only while ratio < 1/2.

Speed: the selection is :func:`commlab.compress.sparse.topk_indices`, exact and faster
than one ``torch.topk`` on large tensors; decompression is one scatter. On a GPU (``cost``):
the check, |x| and ``torch.topk``'s radix select over d (select = d), a gather and the positions'
cast: 4 + 10 k/d passes, 9 launches, 1 sync; decode: zeros and one scatter, 1 + 7 k/d passes,
3 launches.
"""
from __future__ import annotations

import math

import torch

from . import cost as costs
from .base import Compressor, Payload, check_ratio
from .cost import CHECK, Cost
from .sparse import check_sparse, densify, sparse_nbytes, sparse_payload, topk_indices


def count(ratio: float, d: int) -> int:
    """k for a tensor of d coordinates: round(ratio d), at least 1 (0 for an empty tensor)."""
    return min(d, max(1, round(ratio * d))) if d else 0


class TopK(Compressor):
    """``TopK(ratio)``: send the round(ratio d) largest-magnitude coordinates."""

    name = "topk"
    unbiased = False
    contraction = True  # delta = k / d
    aggregation = "gather"

    def __init__(self, ratio: float = 0.01, seed: int = 0):
        super().__init__(seed)
        self.ratio = check_ratio(ratio, self.name)

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """Sparse (idx, val) of the k largest-magnitude coordinates."""
        flat = self.check(t).detach().reshape(-1)
        idx = topk_indices(flat.abs(), count(self.ratio, flat.numel()), self.seed)
        return sparse_payload(idx, flat.index_select(0, idx), t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """The dense tensor of a sparse (idx, val) payload, zero elsewhere."""
        check_sparse(p, self.name)
        return densify(p)

    def kept_count(self, shape) -> int:
        """k, the coordinates a tensor of ``shape`` sends."""
        return count(self.ratio, math.prod(shape))

    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """Exact payload size for a tensor of ``shape`` and ``dtype``: k positions and values."""
        return sparse_nbytes(tuple(shape), self.kept_count(shape), dtype)

    def cost(self, shape) -> costs.Cost:
        """Check, |x|, topk, gather the k values, positions to their wire dtype; decode: densify."""
        d, k = max(math.prod(shape), 1), self.kept_count(shape)
        encode = CHECK + costs.topk(k, d) + costs.gather(k, d) + costs.positions_out(k, d)
        return Cost(encode, costs.densify(k, d))

    def __repr__(self) -> str:
        return f"topk({self.ratio:g})"
