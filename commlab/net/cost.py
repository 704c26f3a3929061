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
* all-reduce, ring:             2 (p - 1) s * T(n / (p s))  (Patarasuk and Yuan 2009; s segments
  per chunk: 2 (p - 1) s alpha + 2 (p - 1)/p n beta)
* all-reduce, binomial tree:    2 ceil(log2 p) * T(n)     (reduce, then broadcast)
* all-reduce, pipelined binary tree, s segments: (4 (s - 1) + r(p) + d(p)) * T(n / s) for p >= 3,
  2 s T(n / s) for p = 2, where with h = floor(log2 p) the first segment takes r(p) = 2h message
  times to climb the heap (2h - 1 when p = 2^h: the deepest node is an only child) and d(p) =
  max over v = 1..p of bitlen(v) + popcount(v) - 2 to come down (1 per left edge, 2 per right)
* all-reduce, double binary tree: about (4 s + O(log p)) T(n / 2s) ~ 2 n beta + 4 s alpha; exact:
  the schedule timed message by message (two pipelines sharing ports have no tidy fill term)
* all-reduce, halving-doubling: 2 log2(p) alpha + 2 (p - 1)/p n beta  (Rabenseifner; p = 2^k);
  other p: 2 T(n) + the same for p' = 2^floor(log2 p) (p - p' ranks fold into partners first)
* all-reduce, hierarchical:     2 (g - 1) T_intra(n) + T_inner(n, ceil(p / g)) over the inter-node
  link (g ranks per node; reduce to a leader, all-reduce across leaders, broadcast back)
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

import functools
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


def _check_segments(s: int) -> None:
    if not isinstance(s, int) or s < 1:
        raise ValueError(f"segments must be an integer >= 1, got {s!r}")


def allreduce_ring(n: float, p: int, link, segments: int = 1) -> float:
    """Ring all-reduce (commlab.arch.ring), each of the p chunks sent as ``segments`` messages."""
    _check(p)
    _check_segments(segments)
    return 2 * (p - 1) * segments * get_link(link).time(n / (p * segments))


def allreduce_tree(n: float, p: int, link) -> float:
    """Binomial-tree reduce, then binomial-tree broadcast, of the whole vector."""
    _check(p)
    return 2 * _log2_ceil(p) * get_link(link).time(n)


def tree_fill(p: int) -> tuple[int, int]:
    """(r, d): message times the first segment needs to climb the heap of p ranks in the
    reduce, and to come down it in the broadcast (see the module docstring)."""
    _check(p)
    h = p.bit_length() - 1
    r = 2 * h - (p == 1 << h)
    d = max(v.bit_length() + bin(v).count("1") - 2 for v in range(1, p + 1))
    return r, d


def allreduce_binary_tree(n: float, p: int, link, segments: int = 4) -> float:
    """Pipelined binary-tree all-reduce (commlab.arch.tree) in ``segments`` segments."""
    _check(p)
    _check_segments(segments)
    t = get_link(link).time(n / segments)
    if p <= 2:  # a single edge: one segment per message time each way
        return 2 * segments * t * (p - 1)
    r, d = tree_fill(p)
    return (4 * (segments - 1) + r + d) * t


def allreduce_double_tree(n: float, p: int, link, segments: int = 4) -> float:
    """Double binary tree all-reduce (commlab.arch.tree), each half in ``segments`` segments:
    its schedule, timed by the clock's rules message by message (commlab.net.clock.replay)."""
    _check(p)
    _check_segments(segments)
    return _double_tree_units(p, segments) * get_link(link).time(n / (2 * segments))


@functools.lru_cache(maxsize=None)
def _double_tree_units(p: int, segments: int) -> float:
    """The double tree's time in message times. Every message of its schedule carries n/(2s)
    bytes and the clock only adds message times and takes maxima, so the replayed schedule
    lasts a whole number K of message times alpha + n/(2s) beta: K is its time on a link with
    alpha = 1 and beta = 0, replayed once per (p, s)."""
    from ..arch.tree import schedules  # the algorithm's own schedule: cost times exactly that
    from .clock import Network, replay

    return max(replay(schedules(0.0, p, segments, double=True), Network(LinkModel(1.0, 0.0))))


def allreduce_halving_doubling(n: float, p: int, link) -> float:
    """Rabenseifner's all-reduce (commlab.arch.halving_doubling), with the fold for p != 2^k."""
    _check(p)
    l = get_link(link)
    q = 1 << (p.bit_length() - 1)  # the largest power of two <= p
    fold = 2 * l.time(n) if q < p else 0.0
    return fold + 2 * (q.bit_length() - 1) * l.alpha + 2 * (q - 1) / q * n * l.beta


def allreduce_hierarchical(n: float, p: int, link, group_size: int, intra_link, inner: str = "ring",
                           **inner_kw) -> float:
    """Hierarchical all-reduce (commlab.arch.hierarchical): ``link`` between nodes,
    ``intra_link`` inside a node of ``group_size`` ranks, ``inner`` across the node leaders."""
    _check(p)
    _check(group_size)
    g, nodes = min(group_size, p), -(-p // group_size)
    return 2 * (g - 1) * get_link(intra_link).time(n) + allreduce(n, nodes, link, inner, **inner_kw)


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


ALLREDUCE = {"naive": allreduce_naive, "ring": allreduce_ring, "tree": allreduce_binary_tree,
             "halving_doubling": allreduce_halving_doubling, "double_tree": allreduce_double_tree,
             "hierarchical": allreduce_hierarchical, "native": allreduce_ring, "binomial_tree": allreduce_tree}


def allreduce(n: float, p: int, link, algorithm: str = "ring", **kw) -> float:
    """The all-reduce time of the algorithm that ``commlab.arch.collectives.allreduce`` runs
    under the same name, with the same keyword arguments (segments=, group_size=, ...)."""
    if algorithm not in ALLREDUCE:
        raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; valid: {', '.join(ALLREDUCE)}")
    return ALLREDUCE[algorithm](n, p, link, **kw)


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
