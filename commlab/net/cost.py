"""Link-level closed forms in the alpha-beta model (Hockney 1994), and how the clock charges
a runtime's native collectives.

``n`` is the message size in bytes (the whole vector for collectives), ``p`` the number of
ranks, ``link`` a :class:`LinkModel` with latency alpha and seconds per byte beta. Reduction
arithmetic is taken as free (the gamma term of Thakur, Rabenseifner and Gropp 2005 is left
out; on modern hardware it is small next to beta). T(n) = alpha + n beta.

* point to point:               T(n)
* broadcast, binomial tree:     ceil(log2 p) T(n)
* reduce, binomial tree:        ceil(log2 p) T(n)
* all-gather, ring:             (p - 1) T(n_per_rank)
* native collectives (:func:`native`): what the simulated clock charges a runtime's own
  all-reduce (a ring's reduce-scatter plus all-gather: 2 (p - 1) T(n/p), the bandwidth-optimal
  2 (p-1)/p n beta of Patarasuk and Yuan 2009), all-gather, broadcast and barrier.

The closed form of each algorithm commlab writes from send/recv sits beside the algorithm,
under the name ``cost``: :func:`commlab.arch.ring.cost`, :func:`commlab.arch.tree.cost`,
:func:`commlab.arch.tree.double_tree_cost`, :func:`commlab.arch.halving_doubling.cost`,
:func:`commlab.arch.naive.cost`, :func:`commlab.arch.hierarchical.cost`, the parameter
server's in :mod:`commlab.arch.ps_layout`, gossip's in :mod:`commlab.decentral.gossip`, and
:func:`commlab.arch.collectives.cost` picks one by name. ``tests/test_cost.py`` checks that
each equals the simulated clock of its algorithm run message by message.
"""
from __future__ import annotations

import math

from .. import checks
from .link import LinkModel, get_link


def _log2_ceil(p: int) -> int:
    return math.ceil(math.log2(p)) if p > 1 else 0


def check_ranks(p: int) -> None:
    """A number of ranks must be an integer >= 1 (a bool is not one)."""
    checks.integer("number of ranks p", p, got=True)


def p2p(n: float, link) -> float:
    """Point to point: T(n) = alpha + n beta."""
    return get_link(link).time(n)


def broadcast(n: float, p: int, link) -> float:
    """Binomial-tree broadcast: ceil(log2 p) T(n)."""
    check_ranks(p)
    return _log2_ceil(p) * get_link(link).time(n)


def reduce(n: float, p: int, link) -> float:
    """Binomial-tree reduce: ceil(log2 p) T(n)."""
    check_ranks(p)
    return _log2_ceil(p) * get_link(link).time(n)


def allgather_ring(n_per_rank: float, p: int, link) -> float:
    """Ring all-gather: (p - 1) T(n_per_rank)."""
    check_ranks(p)
    return (p - 1) * get_link(link).time(n_per_rank)


def native(name: str, n: float, p: int, link: LinkModel) -> float:
    """How the clock charges a runtime's native collective (see commlab.runtime.comm)."""
    if name == "all_reduce":  # reduce-scatter + all-gather around a ring
        check_ranks(p)
        return 2 * allgather_ring(n / p, p, link)
    if name == "all_gather":
        return allgather_ring(n, p, link)
    if name == "broadcast":
        return broadcast(n, p, link)
    if name == "barrier":
        return _log2_ceil(p) * link.alpha
    raise ValueError(f"no cost for collective {name!r}; valid: all_reduce, all_gather, broadcast, barrier")
