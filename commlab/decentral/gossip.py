"""Gossip: every node averages with its neighbours, and only with them.

One synchronous gossip step on a topology with mixing matrix W (Boyd, Ghosh, Prabhakar and
Shah 2006; Xiao and Boyd 2004)::

    x_i <- W_ii x_i + sum_{j in N(i)} W_ij x_j        i.e.  X <- W X

Node i sends x_i to each of its d_i neighbours and takes their x_j: no node ever sees more
than its neighbourhood, and there is no central server. With W symmetric and doubly
stochastic (the Metropolis-Hastings weights of :mod:`commlab.decentral.topology`) every step keeps
the average, and the distance to it shrinks by at least lambda = 1 - spectral gap per step:
``||X_t - mean|| <= lambda^t ||X_0 - mean||``. Decentralized SGD (D-PSGD, Lian et al. 2017)
interleaves this step with local SGD steps (:mod:`commlab.decentral`).

Cost of one step on the simulated clock: max_degree * T(n) with T(n) = alpha + n beta
(:func:`cost`): each node's link sends d_i copies and takes d_i, in
the rounds of the topology's edge colouring so that no link waits for another. Bytes: node
i sends and receives d_i * n, whatever the number of nodes: that independence, and the
absence of a bottleneck node, are gossip's case against a parameter server.
"""
from __future__ import annotations

import torch

from ..net.link import get_link
from . import topology as topology_pkg

GOSSIP_TAG = 23


def cost(n: float, degree: int, link) -> float:
    """Closed-form seconds of one gossip step: d T(n), d the largest degree (the rounds of an
    edge colouring with d colours)."""
    if degree < 0:
        raise ValueError(f"degree must be >= 0, got {degree!r}")
    return degree * get_link(link).time(n)


def share(comm, x: torch.Tensor, topology, tag: int = GOSSIP_TAG) -> dict[int, torch.Tensor]:
    """Send ``x`` to every neighbour of this rank and take theirs: {neighbour: its tensor}.

    Sends and receives go in the rounds of the topology's edge colouring, so that a step costs
    max_degree * T(n) on the simulated clock; the tensors may differ in size from rank to rank
    (compressed payloads)."""
    sends, receives = topology.schedule
    x = x.detach()
    works = [comm.isend(x, j, tag) for j in sends[comm.rank]]
    got = {j: comm.recv(j, tag) for j in receives[comm.rank]}
    for w in works:
        w.wait()
    return got


def replay_share(topology):
    """What :func:`share` on every rank charges, without its messages, as a ``replay(comms,
    pieces)`` for the threads runtime's ``Comm.gather_shared`` (which delivers the pieces at one
    rendezvous): each rank sends its piece to its neighbours in the rounds of the edge colouring,
    then takes theirs, each message departing when its sender sent it, as :func:`share` would."""
    sends, receives = topology.schedule

    def replay(comms, pieces) -> None:
        depart = {(i, j): comms[i]._outgoing(pieces[i], j) for i in range(len(comms)) for j in sends[i]}
        for i, comm in enumerate(comms):
            for j in receives[i]:
                comm._incoming(j, pieces[j], depart[j, i])

    return replay


def mix(x: torch.Tensor, others: dict, topology, rank: int) -> torch.Tensor:
    """Row ``rank`` of W applied to the values at hand: W_ii x + sum_j W_ij others[j] (a new tensor)."""
    self_weight, weights = topology.weights(rank)
    out = x * self_weight
    for j in sorted(others):
        out.add_(others[j], alpha=weights[j])
    return out


def gossip_step(comm, x: torch.Tensor, topology) -> torch.Tensor:
    """One step x_i <- sum_j W_ij x_j over ``comm`` (a new tensor; ``x`` is left as it is).

    topology: a :class:`~commlab.decentral.topology.Topology` on ``comm.world_size`` nodes, or a
    name or spec such as "ring" or "random_regular(d=4)"."""
    top = topology_pkg.get(topology, comm.world_size)
    return mix(x.detach(), share(comm, x, top), top, comm.rank)


def consensus(comm, x: torch.Tensor, topology, steps: int) -> torch.Tensor:
    """``steps`` gossip steps in a row: W^steps x, which tends to the average of all x."""
    top = topology_pkg.get(topology, comm.world_size)
    for _ in range(steps):
        x = gossip_step(comm, x, top)
    return x
