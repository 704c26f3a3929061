"""Hierarchical all-reduce: reduce inside each node, all-reduce across nodes, broadcast back.

Ranks are grouped ``group_size`` consecutive ranks per node (the last node may hold fewer),
and a node's first rank is its leader. Inside a node the links are fast (NVLink, PCIe);
between nodes they are slow (Ethernet, InfiniBand). So (Goyal et al. 2017; Horovod's
hierarchical all-reduce; BlueConnect, Cho et al. 2019, generalises the idea):

1. the g - 1 other ranks of a node send their vector to the leader, which adds them;
2. the m = ceil(p / g) leaders all-reduce across nodes with an inner algorithm (ring by
   default);
3. each leader sends the result to the g - 1 others.

Only one rank per node touches the slow network, with the whole vector, so

    T_hier = 2 (g - 1) (alpha_intra + n beta_intra) + T_inner(n, m; alpha_inter, beta_inter).

It pays when the inter-node link is the bottleneck and a node has many ranks: a flat ring
of p ranks would cross the slow links with 2 (p - 1) latencies instead of 2 (m - 1).
(Horovod and BlueConnect instead reduce-scatter inside a node and run g inner all-reduces of
n/g each, one per local rank, which keeps every rank's link busy; this version keeps
the leader idea of the paper by Goyal et al.)
"""
from __future__ import annotations

import torch

from ..net.cost import check_ranks
from ..net.link import get_link
from .algorithms import flat, register
from .rounds import leader_rounds
from .chunks import absorb, members, wait_all, workspace


def allreduce(comm, x: torch.Tensor, op: str = "sum", ranks=None, group_size: int | None = None,
              inner: str = "ring", tag: int = 0, **inner_kw) -> torch.Tensor:
    """Hierarchical all-reduce of the flat tensor ``x`` in place.

    group_size: ranks per node; by default the run's ``Network(ranks_per_node=...)``.
    inner: the algorithm across node leaders (a flat one of :mod:`commlab.arch.algorithms`),
    with its keyword arguments in ``inner_kw``."""
    across = flat(inner).run
    ranks, i = members(comm, ranks)
    g = _group_size(comm, group_size)
    node = ranks[i - i % g: i - i % g + g]
    leader = node[0]
    if comm.rank != leader:
        comm.send(x, leader, tag)  # x is written again below: wait until it is out
        return comm.recv(leader, tag, out=x)
    scratch = workspace(comm, x, x.numel(), "node")
    for src in node[1:]:
        absorb(comm, comm.recv(src, tag, out=scratch), src, x, op)
    leaders = ranks[::g]
    if len(leaders) > 1:
        across(comm, x, op, ranks=leaders, tag=tag, **inner_kw)
    wait_all([comm.isend(x, dst, tag) for dst in node[1:]])
    return x


def _group_size(comm, group_size):
    if group_size is None:
        network = getattr(comm.clock, "network", None)
        group_size = getattr(network, "ranks_per_node", None)
        if group_size is None:
            raise ValueError("hierarchical all-reduce needs group_size= (ranks per node), or a run whose "
                             "Network(ranks_per_node=...) says it")
    if not isinstance(group_size, int) or group_size < 1:
        raise ValueError(f"group_size must be an integer >= 1, got {group_size!r}")
    return group_size


def cost(n: float, p: int, link, group_size: int, intra_link, inner: str = "ring", **inner_kw) -> float:
    """Closed-form seconds: 2 (g - 1) T_intra(n) + T_inner(n, ceil(p / g)), ``link`` between
    nodes, ``intra_link`` inside a node of ``group_size`` ranks, ``inner`` across the leaders."""
    check_ranks(p)
    check_ranks(group_size)
    g, nodes = min(group_size, p), -(-p // group_size)
    return 2 * (g - 1) * get_link(intra_link).time(n) + flat(inner).cost(n, nodes, link, **inner_kw)


def on_cluster(n: float, cluster) -> float:
    """Seconds on a two-level ``sim.Cluster``: :func:`cost` with its nodes as the groups, the
    intra-node link inside and the inter-node link across the leaders (ring)."""
    return cost(n, cluster.gpus, cluster.inter, cluster.gpus_per_node, cluster.intra)


register("hierarchical", allreduce, cost, on_cluster=on_cluster, program=leader_rounds)
