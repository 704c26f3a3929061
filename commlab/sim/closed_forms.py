"""Closed-form seconds of one message (a collective) of n bytes on a :class:`Cluster`.

The models and why are in :mod:`commlab.sim.cluster`; the formulas reuse the closed forms that
sit beside the algorithms (T(m) = alpha + m beta of the link named, P GPUs, g per node, N nodes).
An all-reduce's time is the ``on_cluster`` its registration gives
(:mod:`commlab.arch.algorithms`, one registry for the Trainer and the simulator); the library's:

* all-reduce, ring through all GPUs:  ``2 (P-1) max(T_intra(n/P), T_inter(n/P))``
  = the larger :func:`commlab.arch.ring.cost` over the kinds of hop present
  (:func:`commlab.arch.algorithms.slowest_hop`);
* all-reduce, hierarchical:           :func:`commlab.arch.hierarchical.cost`,
  ``2 (g-1) T_intra(n) + 2 (N-1) T_inter(n/N)``;
* all-reduce, NCCL (``allreduce="nccl"``, a selection rule of the simulator, :data:`CHOICES`): on
  two or more nodes the faster of the ring and a
  double binary tree, as NCCL's tuner chooses from 2.4 on (Sanders, Speck, Traeff, Parallel
  Computing 2009; NCCL 2.4 release notes): a chain through each node's g GPUs under a binary tree
  of the N nodes, reduce up and broadcast down, pipelined, ``2 [(g-1) alpha_intra + ceil(log2 N)
  alpha_inter] + 2 n max(beta)``: latency O(log N) instead of the ring's 2 (P-1) alpha, so small
  messages take the tree and large ones the ring;
* parameter server (BytePS):          ``2 (g-1) T_intra(n/g)`` (reduce-scatter and all-gather
  inside a node, :func:`commlab.arch.ring.cost` over g GPUs) ``+`` :func:`commlab.arch.ps_layout.ps_sharded`
  ``(n, N, S)`` for the push and pull of N >= 2 worker nodes with S servers, ``2 max(N, S) T_inter(n/S)``;
* in-network aggregation (``arch="switchml"``): the ring inside each node, then one pass through
  the switch, :func:`switchml_seconds`;
* BytePS as deployed (``arch="byteps"``, Jiang et al., OSDI 2020; the survey's launch script puts
  S = N servers on machines of their own): every tensor cut into 4 MB partitions that flow through
  a pipeline (reduce inside the node, push, sum, pull, broadcast inside the node), on full-duplex
  NICs, so the push of one partition overlaps the pull of the one before and the node's own
  stages. The slowest stage sets the time:
  ``max(2 (g-1) T_intra(n/g) - 2 (g-1) alpha_intra, max(N, S) (n/S) beta_inter) + 2 alpha_inter``
  (one latency each way; the busiest NIC, a worker's or a server's, carries max(N, S) n/S bytes
  each way). On one node there is no server: the intra-node all-reduce alone.

:func:`comm_time` returns the ``comm_time(nbytes)`` a schedule's policy and the dispatcher read
(:mod:`commlab.schedule`).
"""
from __future__ import annotations

import math

from ..arch import ring
from ..arch.algorithms import ALLREDUCES, names
from ..arch.innetwork import ina_time
from ..arch.ps_layout import check_count, ps_sharded

ARCHS = ("allreduce", "ps", "byteps", "switchml")


def tree_seconds(n: float, cluster) -> float:
    """Seconds of NCCL's double-binary-tree all-reduce of n bytes (two or more nodes)."""
    depth = (cluster.gpus_per_node - 1) * cluster.intra.alpha + math.ceil(math.log2(cluster.nodes)) * cluster.inter.alpha
    return 2 * depth + 2 * n * max(l.beta for l in cluster.links())


def nccl_seconds(n: float, cluster) -> float:
    """Seconds of NCCL's choice for one all-reduce of n bytes: the faster of the registered ring's
    cluster cost and :func:`tree_seconds` on two or more nodes, the ring on one."""
    t = ALLREDUCES["ring"].on_cluster(n, cluster)
    return min(t, tree_seconds(n, cluster)) if cluster.nodes > 1 else t


CHOICES = {"nccl": nccl_seconds}  # the simulator's selection rules among all-reduces, by name


def allreduce_names() -> list[str]:
    """What ``Cluster(allreduce=...)`` takes: every registered all-reduce with a cluster cost
    (:func:`commlab.arch.register_allreduce`), in registration order, then :data:`CHOICES`."""
    return [*names("on_cluster"), *CHOICES]


def allreduce_seconds(n: float, cluster) -> float:
    """Seconds of one all-reduce of n bytes over every GPU of the cluster: the registered
    algorithm's ``on_cluster`` (or a rule of :data:`CHOICES`)."""
    if cluster.gpus == 1:
        return 0.0
    rule = CHOICES.get(cluster.allreduce) or ALLREDUCES[cluster.allreduce].on_cluster
    return rule(n, cluster)


def servers_for(cluster, servers) -> int:
    """The number of server machines: ``servers`` or, by default, one per worker node."""
    if servers is None:
        return cluster.nodes
    check_count("servers", servers)
    return servers


def ps_seconds(n: float, cluster, servers: int | None = None) -> float:
    """Seconds of one BytePS push and pull of n bytes (with the intra-node halves)."""
    s = servers_for(cluster, servers)
    g = cluster.gpus_per_node
    local = ring.cost(n, g, cluster.intra) if g > 1 else 0.0
    if cluster.nodes == 1:  # BytePS's non-distributed mode: no server
        return local
    return local + ps_sharded(n, cluster.nodes, s, cluster.inter)


def byteps_seconds(n: float, cluster, servers: int | None = None) -> float:
    """Seconds of one BytePS push and pull of n bytes, partitions pipelined (see above)."""
    s = servers_for(cluster, servers)
    g, intra = cluster.gpus_per_node, cluster.intra
    local = ring.cost(n, g, intra) if g > 1 else 0.0
    if cluster.nodes == 1:
        return local
    node = local - 2 * (g - 1) * intra.alpha if g > 1 else 0.0
    return max(node, max(cluster.nodes, s) * n / s * cluster.inter.beta) + 2 * cluster.inter.alpha


def switchml_seconds(n: float, cluster) -> float:
    """Seconds of one in-network aggregation of n bytes: the ring inside each node, then the node's
    vector through a programmable switch on the inter-node link (:func:`commlab.arch.innetwork.ina_time`,
    SwitchML's pool of 512 slots of 64 values), the protocol ``Trainer(arch="switchml")`` runs."""
    g = cluster.gpus_per_node
    local = ring.cost(n, g, cluster.intra) if g > 1 else 0.0
    return local + (ina_time(n, cluster.inter) if cluster.nodes > 1 and n > 0 else 0.0)


def comm_time(cluster, arch: str = "allreduce", servers: int | None = None):
    """``comm_time(nbytes) -> seconds`` of one message of ``arch`` on ``cluster``."""
    if arch == "allreduce":
        if servers is not None:
            raise ValueError(f"servers={servers!r} applies to arch='ps' only; an all-reduce has no servers")
        return lambda n: allreduce_seconds(n, cluster)
    if arch == "switchml":
        return lambda n: switchml_seconds(n, cluster)
    if arch in ("ps", "byteps"):
        s, cost = servers_for(cluster, servers), ps_seconds if arch == "ps" else byteps_seconds
        return lambda n: cost(n, cluster, s)
    raise ValueError(f"unknown arch {arch!r}; valid: {', '.join(ARCHS)}")
