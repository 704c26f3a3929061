"""Placement: which GPUs of a data centre a training job gets, and how fast it then runs.

**The data centre.** ``racks`` racks of ``nodes_per_rack`` nodes of ``gpus_per_node`` GPUs; node
``rack * nodes_per_rack + i``. Inside a node the GPUs share ``intra``; nodes of one rack meet
through their top-of-rack switch on ``inter``; between racks the core is oversubscribed: a job
that spans racks sees ``inter``'s latency and 1/``oversubscription`` of its bandwidth (the same
alpha, beta x oversubscription), the usual price of a fat tree built thinner at the top.

**The free state** is a list: free GPUs of every node, by node index.

**Policies**, each ``policy(free, dc, n) -> {node: gpus} or None`` (None: not enough free GPUs
now; every policy places a job whenever the free total allows, crossing nodes and racks if it
must):

* :func:`consolidated`: first fit, nodes in index order, as many GPUs on each as are free;
* :func:`spread`: one GPU per node, round robin, the anti-locality baseline;
* :func:`topology_aware`: inside one rack whenever a rack can hold the job, on one node if one
  can (best fit), else on as few nodes as possible; across racks only as a last resort.

Locality matters because a job's ring all-reduce runs at its slowest hop (:mod:`commlab.sim.cluster`):
Gandiva (Xiao et al., OSDI 2018) and Tiresias (Gu et al., NSDI 2019) both place jobs with this
in mind. :func:`iteration_time` asks :func:`commlab.sim.iteration` what a footprint costs. With
the default links the rack's network (100GbIB-survey, 7.28 GB/s) is as fast as PCIe 3 inside a
node (PCIe3-mgwfbp, 7.29 GB/s), so spreading over a rack's nodes costs almost nothing and only
crossing racks hurts; with NVLink inside nodes, leaving one node hurts too.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .. import checks
from ..net.link import LinkModel
from ..sim.cluster import Cluster
from ..sim.iteration import iteration
from ..net.link import get_link as link


@dataclass(frozen=True)
class Datacenter:
    """``racks`` x ``nodes_per_rack`` nodes of ``gpus_per_node`` GPUs; ``intra``: link inside a
    node, ``inter``: between nodes of a rack (names or LinkModels); ``oversubscription``: how many
    times thinner the cross-rack bandwidth is (>= 1)."""

    racks: int
    nodes_per_rack: int
    gpus_per_node: int
    intra: LinkModel | str = "PCIe3-mgwfbp"
    inter: LinkModel | str = "100GbIB-survey"
    oversubscription: float = 4.0

    def __post_init__(self):
        for name in ("racks", "nodes_per_rack", "gpus_per_node"):
            checks.integer(name, getattr(self, name))
        for name in ("intra", "inter"):
            try:
                link(getattr(self, name))
            except ValueError as e:
                raise ValueError(f"{name}={getattr(self, name)!r}: {e}") from None
        o = self.oversubscription
        if not checks.is_number(o) or not 1 <= o < math.inf:
            raise ValueError(f"oversubscription={o!r} must be a number >= 1 (and finite)")

    @property
    def nodes(self) -> int:
        """Nodes in all: racks x nodes_per_rack."""
        return self.racks * self.nodes_per_rack

    @property
    def gpus(self) -> int:
        """GPUs in all: nodes x gpus_per_node."""
        return self.nodes * self.gpus_per_node

    def rack_of(self, node: int) -> int:
        """The rack of ``node``: node // nodes_per_rack."""
        return node // self.nodes_per_rack

    def cross_rack(self) -> LinkModel:
        """The link a job spanning racks sees: inter's alpha, its beta x oversubscription."""
        base = link(self.inter)
        return LinkModel(base.alpha, base.beta * self.oversubscription,
                         f"{base.name}/{self.oversubscription:g}x")

    def empty(self) -> list[int]:
        """The free state of an idle data centre."""
        return [self.gpus_per_node] * self.nodes


def _check(free, dc, n):
    if not isinstance(dc, Datacenter):
        raise ValueError(f"dc must be a Datacenter, got {dc!r}")
    checks.integer("n", n)
    if len(free) != dc.nodes or any(not checks.is_int(f) or not 0 <= f <= dc.gpus_per_node
                                    for f in free):
        raise ValueError(f"free={free!r} must list {dc.nodes} free-GPU counts, each in 0..{dc.gpus_per_node}")
    return sum(free) >= n


def _fill(free, nodes, n) -> dict[int, int]:
    """Take as many GPUs as are free on each of ``nodes`` in turn until n."""
    out = {}
    for i in nodes:
        take = min(free[i], n)
        if take > 0:
            out[i], n = take, n - take
        if n == 0:
            return out
    raise RuntimeError("placement: the free GPUs counted do not hold n GPUs (the caller checked they did)")


def consolidated(free: list[int], dc: Datacenter, n: int) -> dict[int, int] | None:
    """First fit: nodes in index order, all their free GPUs, until n (racks may be crossed)."""
    return _fill(free, range(len(free)), n) if _check(free, dc, n) else None


def spread(free: list[int], dc: Datacenter, n: int) -> dict[int, int] | None:
    """One GPU per node per pass over the nodes with free GPUs, most free first (ties by index;
    the order is fixed at the start), passes repeated until n."""
    if not _check(free, dc, n):
        return None
    order = sorted((i for i, f in enumerate(free) if f > 0), key=lambda i: (-free[i], i))
    out, left = {}, list(free)
    while n > 0:
        for i in order:
            if n > 0 and left[i] > 0:
                out[i], left[i], n = out.get(i, 0) + 1, left[i] - 1, n - 1
    return out


def topology_aware(free: list[int], dc: Datacenter, n: int) -> dict[int, int] | None:
    """The fewest nodes inside one rack if any rack can hold the job: one node if one has n free
    (best fit: the fewest free GPUs that suffice, ties by index); else the rack needing the
    fewest nodes (ties: the most free GPUs, then index), its nodes with the most free first.
    If no rack can, racks with the most free GPUs first, each one's most-free nodes first."""
    if not _check(free, dc, n):
        return None
    one = [i for i, f in enumerate(free) if f >= n]
    if one:
        best = min(one, key=lambda i: (free[i], i))
        return {best: n}
    npr = dc.nodes_per_rack
    racks = []  # (nodes needed, -free, rack, node order)
    for r in range(dc.racks):
        nodes = sorted(range(r * npr, (r + 1) * npr), key=lambda i: (-free[i], i))
        total = sum(free[i] for i in nodes)
        if total >= n:
            need, acc = 0, 0
            while acc < n:
                acc, need = acc + free[nodes[need]], need + 1
            racks.append((need, -total, r, nodes))
    if racks:
        return _fill(free, min(racks)[3], n)
    by_rack = sorted(range(dc.racks), key=lambda r: (-sum(free[r * npr:(r + 1) * npr]), r))
    nodes = [i for r in by_rack for i in sorted(range(r * npr, (r + 1) * npr), key=lambda i: (-free[i], i))]
    return _fill(free, nodes, n)


PLACEMENTS = {"consolidated": consolidated, "spread": spread, "topology_aware": topology_aware}


@functools.lru_cache(maxsize=4096)
def _time(model: str, nodes: int, gpn: int, cross: bool, dc: Datacenter, method: str) -> float:
    inter = dc.cross_rack() if cross else dc.inter
    return iteration(model, Cluster(nodes, gpn, intra=dc.intra, inter=inter), method=method).time


def iteration_time(model: str, placement: dict[int, int], dc: Datacenter, method: str = "wfbp_a2a") -> float:
    """Seconds per iteration of data-parallel ``model`` on ``placement`` ({node: gpus}).

    The simulator's cluster is ``len(placement)`` nodes of ``max(placement.values())`` GPUs each,
    on ``dc.inter`` if the nodes share a rack, else on the oversubscribed cross-rack link. This
    is an approximation: :class:`commlab.sim.Cluster` has one GPU count per node, so a footprint
    like {0: 3, 1: 1} is timed as two nodes of 3 GPUs (more GPUs, so a slightly longer ring). It
    also charges the whole ring the cross-rack rate, as a ring through two racks crosses the core.
    Results are cached on (model, nodes, GPUs per node, spans racks, dc, method)."""
    if not isinstance(placement, dict) or not placement:
        raise ValueError(f"placement={placement!r} must be a non-empty dict {{node: gpus}}")
    for node, g in placement.items():
        if not checks.is_int(node) or not 0 <= node < dc.nodes:
            raise ValueError(f"placement node {node!r} must be an integer in 0..{dc.nodes - 1}")
        if not checks.is_int(g) or not 1 <= g <= dc.gpus_per_node:
            raise ValueError(f"placement {node}: {g!r} GPUs must be an integer in 1..{dc.gpus_per_node}")
    cross = len({dc.rack_of(i) for i in placement}) > 1
    return _time(model, len(placement), max(placement.values()), cross, dc, method)
