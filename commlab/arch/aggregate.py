"""Average compressed gradients across ranks over Comm, with any all-reduce algorithm.

Compressors are pure (:mod:`commlab.compress`: a tensor to a Payload and back); this module
is where their payloads meet the network. ``aggregate(comm, compressor, t, key)`` is what
every rank calls with its tensor; all ranks get the same result, the aggregate of C(x_1),
..., C(x_N), by the compressor's ``aggregation``:

* "sum" (fp16, rand-k with a shared seed, ...): each rank's ``summable(t)`` goes through
  :func:`commlab.arch.collectives.allreduce` with the chosen ``algorithm`` (native, ring, tree,
  double_tree, halving_doubling, hierarchical, naive) and ``from_summed`` turns the sum into
  the mean (1/N) sum_i C(x_i);
* "gather" (top-k, threshold, DGC, QSGD, ATOMO, ...): payloads cannot be added, so every
  rank all-gathers every rank's payload as bytes (:func:`gather_payloads`: ``to_bytes``, a
  ring all-gather of variable-size pieces, ``from_bytes``) and ``combine`` averages the
  decompressed tensors;
* "majority" (signSGD with majority vote): gathered like "gather"; ``combine`` takes the
  elementwise sign of the sum of signs.

Compressors with a protocol of their own name it in ``protocol`` and receive the collectives
it needs as arguments (:data:`PROTOCOLS`): PowerSGD two all-reduces of its factors, gTop-k
the sparse tree of :mod:`commlab.arch.gtopk_allreduce`, TernGrad an all-reduce(max) of its scaler and
an all-gather of its payloads. ``compressor=None`` is the uncompressed baseline: an
all-reduce of t, divided by N.

For a parameter server the pieces are reusable: a worker sends ``compress(t).to_bytes()``,
the server ``Payload.from_bytes`` and ``combine``s them (:mod:`commlab.arch.ps_codec`).
"""
from __future__ import annotations

import torch

from ..compress.base import Compressor, Payload
from .collectives import allreduce
from .gtopk_allreduce import gtopk_allreduce
from .ring import all_gather_pieces, replay_all_gather_pieces


def gather_payloads(comm, payload: Payload, ranks=None, tag: int = 0) -> list[Payload]:
    """Every rank's payload (of any size), as a list by rank (or by position in ``ranks``).

    Over all ranks of a runtime whose ranks share memory (threads), the ring's messages are
    counted and timed as sent but the bytes meet at one rendezvous (``Comm.gather_shared``):
    each payload is read from its bytes once and decoded once for all N ranks instead of N
    times (N^2 decodes were most of a compressed step there), with every rank's bytes, message
    counts and clock exactly as the ring gives them."""
    data = payload.to_bytes()
    if ranks is None:
        shared = comm.gather_shared(data, replay_all_gather_pieces, Payload.shared_from_bytes)
        if shared is not None:
            return shared
    return [Payload.from_bytes(b) for b in all_gather_pieces(comm, data, ranks, tag)]


def _powersgd(comm, compressor, tensors, keys, algorithm, kw):
    """Two all-reduces (P, then Q) for all tensors together."""
    return compressor.aggregate(tensors, keys, lambda buf: allreduce(comm, buf, algorithm, "sum", **kw),
                                comm.world_size)


def _gtopk(comm, compressor, tensors, keys, algorithm, kw):
    """A sparse tree reduce and broadcast per tensor (no all-reduce algorithm applies)."""
    return [compressor.aggregate(t, k, lambda *a: gtopk_allreduce(comm, *a), comm.world_size)
            for t, k in zip(tensors, keys)]


def _shared_scale(comm, compressor, tensors, keys, algorithm, kw):
    """TernGrad: agree on one scaler (all-reduce max of a float), then all-gather the payloads."""
    return [compressor.aggregate(t, k, lambda s: comm.all_reduce(s, "max"), lambda p: gather_payloads(comm, p))
            for t, k in zip(tensors, keys)]


PROTOCOLS = {}


def register_protocol(name: str, run) -> None:
    """Make ``run(comm, compressor, tensors, keys, algorithm, kw) -> list of aggregates`` the protocol
    that a compressor with ``protocol = name`` aggregates by: the one line a new one needs."""
    if not isinstance(name, str) or not name or name in PROTOCOLS:
        raise ValueError(f"register_protocol: name={name!r} must be a new, non-empty string; taken: "
                         f"{', '.join(PROTOCOLS)}")
    PROTOCOLS[name] = run


register_protocol("powersgd", _powersgd)
register_protocol("gtopk", _gtopk)
register_protocol("shared_scale", _shared_scale)


def own_protocol(compressor) -> bool:
    """Does the compressor aggregate with a protocol of its own (PowerSGD, gTop-k, TernGrad)?"""
    return compressor is not None and compressor.protocol is not None


def _protocol(compressor):
    if compressor.protocol not in PROTOCOLS:
        raise ValueError(f"{compressor.name} names the aggregation protocol {compressor.protocol!r}, which no one "
                         f"registered; valid: {', '.join(PROTOCOLS)} (commlab.arch.aggregate.register_protocol)")
    return PROTOCOLS[compressor.protocol]


def aggregate(comm, compressor, t: torch.Tensor, key=None, algorithm: str = "native", **kw) -> torch.Tensor:
    """The aggregate over all ranks of ``compressor`` applied to each rank's ``t`` (see the
    module doc); ``algorithm`` and ``kw`` choose the all-reduce for "sum" compressors."""
    if compressor is None:
        return allreduce(comm, t.detach().clone(), algorithm, "avg", **kw)
    if not isinstance(compressor, Compressor):
        raise TypeError(f"expected a Compressor or None, got {type(compressor).__name__}")
    if own_protocol(compressor):
        return _protocol(compressor)(comm, compressor, [t], [key], algorithm, kw)[0]
    if compressor.aggregation == "sum":
        s = compressor.summable(t, key)
        return compressor.from_summed(allreduce(comm, s, algorithm, "sum", **kw), t, comm.world_size)
    return compressor.combine(gather_payloads(comm, compressor.compress(t, key)), key).to(t.device)


def aggregate_all(comm, compressor, tensors, keys=None, algorithm: str = "native", **kw) -> list[torch.Tensor]:
    """:func:`aggregate` for a list of tensors (keys 0, 1, ... unless given); a protocol that
    handles all tensors at once (PowerSGD: two all-reduces in all) gets them together."""
    tensors = list(tensors)
    keys = list(range(len(tensors))) if keys is None else list(keys)
    if len(keys) != len(tensors):
        raise ValueError(f"{len(tensors)} tensors but {len(keys)} keys")
    if own_protocol(compressor):
        return _protocol(compressor)(comm, compressor, tensors, keys, algorithm, kw)
    return [aggregate(comm, compressor, t, k, algorithm, **kw) for t, k in zip(tensors, keys)]
