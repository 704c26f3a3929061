"""gTop-k's communication: a binomial tree of sparse merges, reduce then broadcast (Shi, Wang,
Chu, Li, ICDCS 2019; the compressor, its selection and residual, is
:class:`commlab.compress.gtopk.GTopK`).

Reduce (ceil(log2 N) rounds, rooted at rank 0): in round j (step s = 2^j) rank r with
r mod 2s = s sends its sparse vector to r - s and leaves; rank r with r mod 2s = 0 and
r + s < N receives, merges (:func:`commlab.compress.gtopk.merge`: union of positions, values
summed where they meet, the k largest kept). Broadcast: rank 0's result goes back down the
same tree. Each message is one payload of k entries, m = header + k (index + value bytes):

    T = 2 ceil(log2 N) (alpha + m beta)                                       (:func:`cost`)
"""
from __future__ import annotations

import math

import torch

from ..compress.base import Payload
from ..compress.gtopk import merge
from ..compress.sparse import decode_indices, sparse_nbytes, sparse_payload
from ..compress.topk import count
from ..net import cost as net_cost


def tree(rank: int, world_size: int) -> tuple[int | None, list[int]]:
    """This rank's parent and children (in the order they are merged) in the binomial tree."""
    parent, kids, step = None, [], 1
    while step < world_size:
        if rank % (2 * step) == step:
            parent = rank - step
            break
        if rank + step < world_size:
            kids.append(rank + step)
        step *= 2
    return parent, kids


def gtopk_allreduce(comm, idx: torch.Tensor, val: torch.Tensor, k: int, shape, dtype, tag: int = 0):
    """Every rank passes its sparse vector (int64 positions, values); all get the global
    top-k (positions, values of the summed merges) by the tree reduce and broadcast."""
    parent, kids = tree(comm.rank, comm.world_size)
    d = math.prod(shape)
    for child in kids:
        p = Payload.from_bytes(comm.recv(child, tag))
        idx, val = merge(idx, val, decode_indices(p["idx"], d), p["val"].to(val.dtype), k)
    if parent is not None:
        comm.send(sparse_payload(idx, val, shape, dtype).to_bytes(), parent, tag)
        p = Payload.from_bytes(comm.recv(parent, tag))
        idx, val = decode_indices(p["idx"], d), p["val"].to(val.dtype)
    if kids:
        data = sparse_payload(idx, val, shape, dtype).to_bytes()
        for w in [comm.isend(data, child, tag) for child in reversed(kids)]:
            w.wait()
    return idx, val


def cost(shape, ratio: float, world_size: int, link, dtype=torch.float32) -> float:
    """Closed-form seconds of one gTop-k round: 2 ceil(log2 N) (alpha + m beta)."""
    m = sparse_nbytes(tuple(shape), count(ratio, math.prod(shape)), dtype)
    return net_cost.reduce(m, world_size, link) + net_cost.broadcast(m, world_size, link)
