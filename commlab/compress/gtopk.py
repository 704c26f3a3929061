"""gTop-k: global top-k sparsification by tree merging (Shi, Wang, Chu, Li 2019, "A
Distributed Synchronous SGD Algorithm with Global Top-k Sparsification for Low Bandwidth
Networks", ICDCS).

Plain top-k all-gathers every worker's k coordinates: each rank receives (N-1) k of them and
the sum has up to N k non-zeros. gTop-k keeps the message at k coordinates all the way:

* Reduce (ceil(log2 N) rounds, a binomial tree rooted at rank 0): in round j (step s = 2^j)
  rank r with r mod 2s = s sends its sparse vector to r - s and leaves; rank r with
  r mod 2s = 0 and r + s < N receives, merges (adds the two sparse vectors: union of
  positions, values summed where they meet) and keeps the k entries of largest magnitude.
* Broadcast: rank 0's result, the global top-k, goes back down the same tree.

Any N works (the tree is a binomial tree, not a hypercube). The result approximates
top-k(sum_i top-k(x_i)): an entry dropped at an inner merge cannot come back, so it is the
top-k of that tree's merges, exactly (the test replays the merges in numpy).

Residual (the paper's Algorithm): a worker accumulates acc = residual + g, selects its
local top-k, and after the global round keeps as residual everything it has not delivered:
acc minus its local top-k entries at the positions the global top-k holds. The update is
w <- w - lr gtopk / N: :meth:`GTopK.aggregate` returns the global sum / N.

Cost with m = header + k (index bytes + value bytes) per message (every message holds exactly
k entries once the vector has at least k), along the critical path:

    T = 2 ceil(log2 N) (alpha + m beta),

against (N-1)(alpha + m beta) for all-gathering the top-k's and 2 (N-1) alpha +
2 (N-1)/N 4 d beta for a dense ring all-reduce (:func:`commlab.arch.gtopk_allreduce.cost`). The tree runs
over Comm in :mod:`commlab.arch.gtopk_allreduce`: one uint8 message (the payload's ``to_bytes``) per
tree edge and direction; this module is the compressor's pure part (selection, merge, residual).

Declared: ``wire`` is one ("tree", payload bytes); ``cost`` is a rank's part of :meth:`GTopK.aggregate`
on a GPU, its encode top-k's selection on the residual-corrected acc (9 + 10 k/d passes, 11
launches) and the residual's update (two boolean selections: 2 syncs), its decode the scatter of
the global top-k; ``combine_work(n)``: the ceil(log2 n) merges a rank of the tree does at most.
"""
from __future__ import annotations

import math

import torch

from . import cost as costs
from .cost import CHECK, Cost, KernelWork
from .sparse import topk_indices
from .topk import TopK, count


def merge(idx_a, val_a, idx_b, val_b, k: int):
    """Add two sparse vectors (int64 positions, values) and keep the k largest |values|."""
    idx, inverse = torch.unique(torch.cat([idx_a, idx_b]), return_inverse=True)
    val = torch.zeros(idx.numel(), dtype=val_a.dtype, device=val_a.device)
    val.index_add_(0, inverse, torch.cat([val_a, val_b]))
    if idx.numel() > k:
        keep = torch.topk(val.abs(), k, sorted=False).indices
        idx, val = idx[keep], val[keep]
    return idx, val


class GTopK(TopK):
    """``GTopK(ratio)``: global top-k with a residual per key (:meth:`aggregate`).

    The algorithm is a tree of merges (:mod:`commlab.arch.gtopk_allreduce`), with its residual built in
    (so no ``+ef``).
    ``compress``/``decompress`` alone are top-k's: a worker's local selection without
    residual (what one tree leaf sends)."""

    name = "gtopk"
    no_error_feedback = "has its error feedback built in (it keeps its own residual)"
    protocol = "gtopk"  # aggregated by the sparse tree of commlab.arch.gtopk_allreduce

    def __init__(self, ratio: float = 0.01, seed: int = 0):
        super().__init__(ratio, seed)
        self.residuals: dict = {}

    def aggregate(self, t: torch.Tensor, key, sparse_allreduce, world_size: int) -> torch.Tensor:
        """The global top-k of all ranks' residual-corrected tensors, divided by N = ``world_size``.
        Every rank calls this with its tensor and the collective ``sparse_allreduce(idx, val,
        k, shape, dtype) -> (idx, val)`` (the tree of :func:`commlab.arch.gtopk_allreduce.gtopk_allreduce`);
        all get the same tensor."""
        flat = self.check(t).detach().reshape(-1)
        e = self.residuals.get(key)
        acc = flat.to(torch.promote_types(t.dtype, torch.float32), copy=True)
        if e is not None and e.numel() == acc.numel():
            acc += e
        k = count(self.ratio, acc.numel())
        idx = topk_indices(acc.abs(), k, self.seed)
        sent = acc[idx].to(t.dtype)
        gidx, gval = sparse_allreduce(idx, sent, k, t.shape, t.dtype)
        delivered = torch.isin(idx, gidx)
        acc[idx[delivered]] -= sent[delivered].to(acc.dtype)  # leaves only fp16/bf16 rounding behind
        self.residuals[key] = acc
        out = torch.zeros(acc.numel(), dtype=acc.dtype, device=acc.device)
        out[gidx] = gval.to(acc.dtype) / world_size
        return out.to(t.dtype).view(t.shape)

    def wire(self, shape, dtype=torch.float32) -> tuple:
        """One payload of k entries up and down the binomial tree (:mod:`commlab.arch.gtopk_allreduce`)."""
        return (("tree", self.payload_bytes(shape, dtype)),)

    def cost(self, shape) -> Cost:
        """:meth:`aggregate` without the tree: residual-corrected top-k and the residual's update;
        decode: the global top-k scattered into zeros, divided by N."""
        d, k = max(math.prod(shape), 1), self.kept_count(shape)
        f = k / d
        encode = (CHECK
                  + KernelWork(2, 1) + KernelWork(3, 1)  # acc = copy of g; acc += e
                  + costs.topk(k, d) + costs.gather(k, d)  # |acc|, topk, sent = acc[idx]
                  + costs.positions_out(k, d)  # the leaf's payload
                  + KernelWork(f * 4.25, 1)  # delivered = isin(idx, global idx)
                  + KernelWork(f * 2.25, 1, syncs=1).repeat(2)  # idx[delivered], sent[delivered]: nonzero, then gather
                  + KernelWork(f * 8, 3))  # acc[those] -= sent: gather, subtract, index_put_
        decode = KernelWork(1, 1) + KernelWork(f * 2, 1) + KernelWork(f * 4, 1)  # zeros(d); values / N; index_put_
        return Cost(encode, decode)

    def combine_work(self, shape, n: int) -> KernelWork:
        """gTop-k combines no gathered payloads: the ceil(log2 n) merges a rank does at most, each
        the union of two k-entry vectors (a sort-based unique: 1 sync), their values added, topk of the 2k."""
        d, k = max(math.prod(shape), 1), self.kept_count(shape)
        f = k / d
        merge = (costs.positions_in(k, d) + KernelWork(f * 8, 1)  # received positions to int64; cat the two
                 + KernelWork(f * 12, 2, syncs=1)  # unique with its inverse
                 + KernelWork(f * 4, 3) + KernelWork(f * 8, 1)  # zeros, cat the values; index_add_
                 + KernelWork(f * 2 + f * 3, 1, select=2 * k)  # topk of |values|
                 + KernelWork(f * 8, 2))  # positions and values of the k kept
        return merge.repeat(math.ceil(math.log2(n)) if n > 1 else 0)

        self.residuals.clear()

    def __repr__(self) -> str:
        return f"gtopk({self.ratio:g})"
