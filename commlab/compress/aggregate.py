"""Average compressed gradients across ranks over Comm, with any all-reduce algorithm.

``aggregate(comm, compressor, t, key)`` is what every rank calls with its tensor; all ranks
get the same result, the aggregate of C(x_1), ..., C(x_N):

* aggregation "sum" (fp16, rand-k with a shared seed, ...): each rank's ``summable(t)``
  goes through :func:`commlab.arch.collectives.allreduce` with the chosen ``algorithm``
  (native, ring, tree, double_tree, halving_doubling, hierarchical, naive) and
  ``from_summed`` turns the sum into the mean (1/N) sum_i C(x_i);
* "gather" (top-k, threshold, DGC, QSGD, ATOMO, ...): payloads cannot be added, so every
  rank all-gathers every rank's payload as bytes (:func:`gather_payloads`: ``to_bytes``,
  a ring all-gather of variable-size pieces, ``from_bytes``) and ``combine`` averages the
  decompressed tensors;
* "majority" (signSGD with majority vote): gathered like "gather"; ``combine`` takes the
  elementwise sign of the sum of signs.

Compressors with a protocol of their own override ``Compressor.aggregate`` and are handed
the call: PowerSGD (two all-reduces, with ``algorithm``), gTop-k (a tree of send/recv).
Both keep their own residual, so wrapping them in ``+ef`` is refused (ValueError).
``compressor=None`` is the uncompressed baseline: an all-reduce of t, divided by N.

For a parameter server the pieces are reusable: a worker sends ``compress(t).to_bytes()``,
the server ``Payload.from_bytes`` and ``combine``s them (or adds ``summable`` tensors).
"""
from __future__ import annotations

import torch

from ..arch.collectives import allreduce
from ..arch.ring import all_gather_pieces
from .base import Compressor, Payload


def gather_payloads(comm, payload: Payload, ranks=None, tag: int = 0) -> list[Payload]:
    """Every rank's payload (of any size), as a list by rank (or by position in ``ranks``)."""
    return [Payload.from_bytes(b) for b in all_gather_pieces(comm, payload.to_bytes(), ranks, tag)]


def own_protocol(compressor) -> bool:
    """Does the compressor aggregate with a protocol of its own (PowerSGD, gTop-k)?"""
    return type(compressor).aggregate is not Compressor.aggregate


def aggregate(comm, compressor, t: torch.Tensor, key=None, algorithm: str = "native", **kw) -> torch.Tensor:
    """The aggregate over all ranks of ``compressor`` applied to each rank's ``t`` (see the
    module doc); ``algorithm`` and ``kw`` choose the all-reduce for "sum" compressors."""
    if compressor is None:
        return allreduce(comm, t.detach().clone(), algorithm, "avg", **kw)
    if not isinstance(compressor, Compressor):
        raise TypeError(f"expected a Compressor or None, got {type(compressor).__name__}")
    if own_protocol(compressor):
        return compressor.aggregate(comm, t, key, algorithm=algorithm, **kw)
    if compressor.aggregation == "sum":
        s = compressor.summable(t, key)
        return compressor.from_summed(allreduce(comm, s, algorithm, "sum", **kw), t, comm.world_size)
    return compressor.combine(gather_payloads(comm, compressor.compress(t, key)), key).to(t.device)


def aggregate_all(comm, compressor, tensors, keys=None, algorithm: str = "native", **kw) -> list[torch.Tensor]:
    """:func:`aggregate` for a list of tensors (keys 0, 1, ... unless given). A compressor
    with an ``aggregate_all`` of its own (PowerSGD: two all-reduces for all tensors) uses it."""
    tensors = list(tensors)
    keys = list(range(len(tensors))) if keys is None else list(keys)
    if len(keys) != len(tensors):
        raise ValueError(f"{len(tensors)} tensors but {len(keys)} keys")
    if hasattr(compressor, "aggregate_all"):
        return compressor.aggregate_all(comm, tensors, keys, algorithm=algorithm, **kw)
    return [aggregate(comm, compressor, t, k, algorithm, **kw) for t, k in zip(tensors, keys)]
