"""Closed-form communication times in the alpha-beta model (Hockney 1994).

``n`` is the message size in bytes (the whole vector for collectives), ``p`` the number
of ranks, ``link`` a :class:`LinkModel` with latency alpha and seconds per byte beta.
Reduction arithmetic is taken as free (the gamma term of Thakur, Rabenseifner and
Gropp 2005 is left out; on modern hardware it is small next to beta).

Formulas (T(n) = alpha + n * beta):

* point to point:               T(n)
* broadcast, binomial tree:     ceil(log2 p) * T(n)
* reduce, binomial tree:        ceil(log2 p) * T(n)
* all-reduce, naive:            2 (p - 1) * T(n)          (p-1 messages into a root, p-1 out)
* all-reduce, ring:             2 (p - 1) * T(n / p)      (Patarasuk and Yuan 2009)
* all-reduce, binomial tree:    2 ceil(log2 p) * T(n)     (reduce, then broadcast)
* all-reduce, halving-doubling: 2 log2(p) alpha + 2 (p - 1)/p n beta  (Rabenseifner; p = 2^k)
* all-gather, ring:             (p - 1) * T(n_per_rank)
* parameter server, single:     2 p * T(n)                (p pushes into one server, p pulls out)
* parameter server, S shards:   2 max(p, S) * T(n/S)   for p >= 2 workers; (S + 1) * T(n/S) for one
  (S server ranks, each owning n/S; the schedule is staggered: worker w sends its j-th piece to
  shard (w + j) mod S, shard s returns its i-th piece to worker (s + i) mod p, and every rank takes
  its messages in the order they leave. A shard's link takes p pieces in and then p out; a
  worker's sends S pieces and takes S back. A lone worker's pieces come back pipelined, each as
  soon as its shard has it. Without the stagger, every worker starting at shard 0, it takes
  (2p + S - 1) T(n/S).)
* parameter server, co-located: 2 (p - 1) * T(n/S)    (S <= p; server s on worker rank s, BytePS)
  (the same stagger; a worker's piece of its own shard stays local. Each server takes p - 1
  pieces in by (p - 1) T, then sends p - 1 back; S = p is an all-to-all reduce-scatter plus
  all-gather, with the ring's cost; S = 1 is the naive all-reduce.)
* gossip step, degree d:        d * T(n)                  (send to and take from d neighbours;
  d is the largest degree when degrees differ: the rounds of an edge colouring with d colours)

The simulated clock (:mod:`commlab.net.clock`) reproduces these when the patterns are run
message by message; ``tests/test_cost.py`` checks that they agree.
"""
from __future__ import annotations

import math

from .link import LinkModel, get_link


def _log2_ceil(p: int) -> int:
    return math.ceil(math.log2(p)) if p > 1 else 0


def _check(p: int) -> None:
    if not isinstance(p, int) or p < 1:
        raise ValueError(f"number of ranks p must be an integer >= 1, got {p!r}")


def p2p(n: float, link) -> float:
    return get_link(link).time(n)


def broadcast(n: float, p: int, link) -> float:
    _check(p)
    return _log2_ceil(p) * get_link(link).time(n)


def reduce(n: float, p: int, link) -> float:
    _check(p)
    return _log2_ceil(p) * get_link(link).time(n)


def allreduce_naive(n: float, p: int, link) -> float:
    _check(p)
    return 2 * (p - 1) * get_link(link).time(n)


def allreduce_ring(n: float, p: int, link) -> float:
    _check(p)
    return 2 * (p - 1) * get_link(link).time(n / p)


def allreduce_tree(n: float, p: int, link) -> float:
    _check(p)
    return 2 * _log2_ceil(p) * get_link(link).time(n)


def allreduce_halving_doubling(n: float, p: int, link) -> float:
    _check(p)
    l = get_link(link)
    return 2 * _log2_ceil(p) * l.alpha + 2 * (p - 1) / p * n * l.beta


def allgather_ring(n_per_rank: float, p: int, link) -> float:
    _check(p)
    return (p - 1) * get_link(link).time(n_per_rank)


def ps_single(n: float, workers: int, link) -> float:
    _check(workers)
    return 2 * workers * get_link(link).time(n)


def ps_sharded(n: float, workers: int, shards: int, link) -> float:
    """Push n bytes from each worker into S shards and pull them back, staggered (see above)."""
    _check(workers)
    _check(shards)
    piece = get_link(link).time(n / shards)
    if workers == 1:  # nothing to wait for: each piece returns as soon as its shard has it
        return (shards + 1) * piece
    return 2 * max(workers, shards) * piece


def ps_colocated(n: float, workers: int, shards: int, link) -> float:
    """Push and pull with server s on worker rank s (S <= p), staggered (see above)."""
    _check(workers)
    _check(shards)
    if shards > workers:
        raise ValueError(f"co-located servers need shards <= workers, got shards={shards}, workers={workers}")
    return 2 * (workers - 1) * get_link(link).time(n / shards)


def gossip_step(n: float, degree: int, link) -> float:
    if degree < 0:
        raise ValueError(f"degree must be >= 0, got {degree!r}")
    return degree * get_link(link).time(n)


ALLREDUCE = {"naive": allreduce_naive, "ring": allreduce_ring, "tree": allreduce_tree,
             "halving_doubling": allreduce_halving_doubling}


def allreduce(n: float, p: int, link, algorithm: str = "ring") -> float:
    if algorithm not in ALLREDUCE:
        raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; valid: {', '.join(ALLREDUCE)}")
    return ALLREDUCE[algorithm](n, p, link)


def native(name: str, n: float, p: int, link: LinkModel) -> float:
    """How the clock charges a runtime's native collective (see commlab.runtime.comm)."""
    if name == "all_reduce":
        return allreduce_ring(n, p, link)
    if name == "all_gather":
        return allgather_ring(n, p, link)
    if name == "broadcast":
        return broadcast(n, p, link)
    if name == "barrier":
        return _log2_ceil(p) * link.alpha
    raise ValueError(f"no cost for collective {name!r}; valid: all_reduce, all_gather, broadcast, barrier")
