"""Gradient synchronization on a fabric, flow by flow: which algorithm suits which wiring.

Each algorithm is a sequence of phases; a phase is a set of flows that start together and ends
when its last flow ends (:func:`phase`, simulated by :func:`commlab.sim.flows.simulate`, so flows
that share a link share it max-min fairly). A ring step repeats the same flows, so a phase of s
identical steps costs s times one. With N nodes of g GPUs, n bytes per GPU, C a NIC's rate:

* :func:`flat_ring`: one ring through all P = N g GPUs (NCCL's default over one NIC per node):
  2 (P-1) steps of n/P; across nodes, each step crosses a node's NIC once.
* :func:`leader_allreduce`: reduce to one leader GPU per node (a reduce-scatter inside the node,
  then the chunks gathered on the leader), a ring of the N leaders over n bytes, and back
  (Horovod's hierarchical mode in spirit; :mod:`commlab.arch.hierarchical` runs it for real).
  Inter-node: 2 (N-1)/N n / C, through one NIC per node.
* :func:`rail_allreduce`: reduce-scatter inside the node, then g rings at once, ring i joining GPU i
  of every node over n/g bytes, then an all-gather inside the node (the two-level all-reduce of
  NCCL's rail-aware rings and of Horovod's ``HOROVOD_HIERARCHICAL_ALLREDUCE``). Inter-node:
  2 (N-1)/N (n/g) / C per rail: g times less than the leader's when every GPU has its NIC on its
  own rail, the same when the g rings share one NIC.
* :func:`ps_sync`: a parameter server sharded over the workers themselves (worker r serves part
  r): every worker pushes n/N to each other, then pulls the sums back; 2 (N-1)/N n / C on one NIC.
* :func:`bml_sync`: BML (Wang et al., NeurIPS 2018) on BCube(b, k): the gradient in k+1 parts,
  part j reduce-scattered through the levels j, j+1, ... (mod k+1), one level per stage, among the
  b servers on that level's switch, then all-gathered back; at every stage the k+1 parts use
  different levels, so a server drives its k+1 NICs at once: 2 (N-1)/N n / ((k+1) C).
"""
from __future__ import annotations

from .. import checks
from .flows import simulate


def phase(fabric, flows) -> float:
    """Seconds until the last of ``flows`` (src, dst, nbytes), all started at once, ends."""
    flows = [(s, d, b, 0.0) for s, d, b in flows if b > 0 and s != d]
    return max(simulate(fabric, flows)) if flows else 0.0


def _ring_flows(rings, nbytes):
    return [(r[i], r[(i + 1) % len(r)], nbytes) for r in rings if len(r) > 1 for i in range(len(r))]


def node_groups(fabric, gpus_per_node) -> list[list[int]]:
    """The hosts of each node, node by node (ranks in order); ValueError unless ``gpus_per_node`` divides them."""
    p = len(fabric.hosts)
    if not checks.is_int(gpus_per_node) or gpus_per_node < 1 \
            or p % gpus_per_node:
        raise ValueError(f"gpus_per_node={gpus_per_node!r} must divide the fabric's {p} GPUs")
    return [list(range(s, s + gpus_per_node)) for s in range(0, p, gpus_per_node)]


def flat_ring(fabric, nbytes: float) -> float:
    """One ring through every GPU in rank order: 2 (P-1) steps of n/P."""
    p = len(fabric.hosts)
    return 2 * (p - 1) * phase(fabric, _ring_flows([list(range(p))], nbytes / p)) if p > 1 else 0.0


def _intra_reduce_scatter(fabric, nodes, nbytes):
    g = len(nodes[0])
    return (g - 1) * phase(fabric, _ring_flows(nodes, nbytes / g))


def leader_allreduce(fabric, nbytes: float, gpus_per_node: int) -> float:
    """Reduce to each node's first GPU, ring among the leaders, broadcast back (see the module doc)."""
    nodes = node_groups(fabric, gpus_per_node)
    g, leaders = gpus_per_node, [n[0] for n in nodes]
    gather = phase(fabric, [(r, n[0], nbytes / g) for n in nodes for r in n[1:]])
    scatter = phase(fabric, [(n[0], r, nbytes / g) for n in nodes for r in n[1:]])
    inter = 2 * (len(leaders) - 1) * phase(fabric, _ring_flows([leaders], nbytes / len(leaders)))
    return 2 * _intra_reduce_scatter(fabric, nodes, nbytes) + gather + inter + scatter


def rail_allreduce(fabric, nbytes: float, gpus_per_node: int) -> float:
    """Reduce-scatter in the node, g concurrent rings across nodes (one per rail), all-gather."""
    nodes = node_groups(fabric, gpus_per_node)
    rails = [[n[i] for n in nodes] for i in range(gpus_per_node)]
    count = len(nodes)
    inter = 2 * (count - 1) * phase(fabric, _ring_flows(rails, nbytes / gpus_per_node / count))
    return 2 * _intra_reduce_scatter(fabric, nodes, nbytes) + inter


def ps_sync(fabric, nbytes: float, ranks=None) -> float:
    """Push n/N from every worker to every other (worker s serves part s), then pull the sums."""
    ranks = list(range(len(fabric.hosts))) if ranks is None else list(ranks)
    share = nbytes / len(ranks)
    return 2 * phase(fabric, [(a, b, share) for a in ranks for b in ranks if a != b])


def bml_sync(fabric, nbytes: float, n: int, k: int) -> float:
    """BML's synchronization on ``fabric`` = BCube(n, k) (see the module doc)."""
    hosts = n ** (k + 1)
    if len(fabric.hosts) != hosts:
        raise ValueError(f"bml_sync: BCube({n}, {k}) has n^(k+1) = {hosts} hosts, the fabric has {len(fabric.hosts)}")
    levels, total = k + 1, 0.0
    for stage in range(levels):
        share = nbytes / levels / n ** (stage + 1)  # what a server sends each peer at this stage
        flows = []
        for part in range(levels):
            step = n ** ((part + stage) % levels)
            for h in range(hosts):
                digit = (h // step) % n
                flows += [(h, h + (d - digit) * step, share) for d in range(n) if d != digit]
        total += phase(fabric, flows)
    return 2 * total  # the all-gather retraces the reduce-scatter's volumes in reverse
