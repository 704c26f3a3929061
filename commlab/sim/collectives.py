"""Closed-form seconds of one message (a collective) of n bytes on a :class:`Cluster`.

The models and why are in :mod:`commlab.sim.cluster`; the formulas reuse the closed forms that
sit beside the algorithms (T(m) = alpha + m beta of the link named, P GPUs, g per node, N nodes):

* all-reduce, ring through all GPUs:  ``2 (P-1) max(T_intra(n/P), T_inter(n/P))``
  = the larger :func:`commlab.arch.ring.cost` over the kinds of hop present;
* all-reduce, hierarchical:           :func:`commlab.arch.hierarchical.cost`,
  ``2 (g-1) T_intra(n) + 2 (N-1) T_inter(n/N)``;
* parameter server (BytePS):          ``2 (g-1) T_intra(n/g)`` (reduce-scatter and all-gather
  inside a node, :func:`commlab.arch.ring.cost` over g GPUs) ``+`` :func:`commlab.arch.ps_layout.ps_sharded`
  ``(n, N, S)`` for the push and pull of N >= 2 worker nodes with S servers, ``2 max(N, S) T_inter(n/S)``.

:func:`comm_time` returns the ``comm_time(nbytes)`` a schedule's policy and the dispatcher read
(:mod:`commlab.schedule`).
"""
from __future__ import annotations

from ..arch import hierarchical, ring
from ..arch.ps_layout import check_count, ps_sharded

ARCHS = ("allreduce", "ps")


def allreduce(n: float, cluster) -> float:
    """Seconds of one all-reduce of n bytes over every GPU of the cluster."""
    p = cluster.gpus
    if p == 1:
        return 0.0
    if cluster.allreduce == "hierarchical":
        return hierarchical.cost(n, p, cluster.inter, cluster.gpus_per_node, cluster.intra)
    return max(ring.cost(n, p, l) for l in cluster.links())


def servers_for(cluster, servers) -> int:
    """The number of server machines: ``servers`` or, by default, one per worker node."""
    if servers is None:
        return cluster.nodes
    check_count("servers", servers)
    return servers


def ps(n: float, cluster, servers: int | None = None) -> float:
    """Seconds of one BytePS push and pull of n bytes (with the intra-node halves)."""
    s = servers_for(cluster, servers)
    g = cluster.gpus_per_node
    local = ring.cost(n, g, cluster.intra) if g > 1 else 0.0
    if cluster.nodes == 1:  # BytePS's non-distributed mode: no server
        return local
    return local + ps_sharded(n, cluster.nodes, s, cluster.inter)


def comm_time(cluster, arch: str = "allreduce", servers: int | None = None):
    """``comm_time(nbytes) -> seconds`` of one message of ``arch`` on ``cluster``."""
    if arch == "allreduce":
        if servers is not None:
            raise ValueError(f"servers={servers!r} applies to arch='ps' only; an all-reduce has no servers")
        return lambda n: allreduce(n, cluster)
    if arch == "ps":
        s = servers_for(cluster, servers)
        return lambda n: ps(n, cluster, s)
    raise ValueError(f"unknown arch {arch!r}; valid: {', '.join(ARCHS)}")
