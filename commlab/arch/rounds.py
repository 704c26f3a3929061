"""Message programs of the all-reduces: every point-to-point message, as rounds of (src, dst, bytes).

A program is what an all-reduce sends, written as plain data so that the simulator
(:mod:`commlab.sim.programs`, a layer above) can replay it on a cluster's ports without this
package knowing about the simulator. ``program(n, cluster)`` returns a list of rounds; a round is
``(src, dst, nbytes)``: two equal-length sequences of ranks (GPUs, numbered node by node) and the
bytes of each message (one number for all, or one per message). ``cluster`` is read for its shape
only: ``gpus``, ``nodes``, ``gpus_per_node``.

What a round means (the rule the simulator applies): a rank sends its messages of a round once
everything it received since its previous send has arrived (its first send waits for the end of
its previous collective); messages leave and arrive through the ports in the order listed. So a
round is a step of the algorithm, and a rank forwards what it was given, as the real algorithms
do. A rank's part of the collective is over when the messages of the last round it received in
have arrived.

* :func:`ring_rounds`: the ring through all P GPUs (:mod:`commlab.arch.ring`), 2 (P-1) rounds in
  which every position sends one chunk of n/P bytes to the next;
* :func:`leader_rounds`: the hierarchical all-reduce (:mod:`commlab.arch.hierarchical`): the g-1
  other GPUs of each node send n bytes to its first GPU, the first GPUs run the ring among
  themselves (2 (N-1) rounds of n/N), then each sends n bytes back to the g-1 others.
"""
from __future__ import annotations

import numpy as np


def ring(ranks, n: float, steps: int) -> list:
    """``steps`` rounds of a ring over ``ranks`` (position j sends to j+1), each message n/len(ranks) bytes."""
    src = np.asarray(ranks)
    dst = np.roll(src, -1)
    return [(src, dst, n / len(src))] * steps


def ring_rounds(n: float, cluster) -> list:
    """The ring all-reduce through all P GPUs: 2 (P-1) rounds of one n/P chunk per GPU."""
    p = cluster.gpus
    return ring(np.arange(p), n, 2 * (p - 1))


def leader_rounds(n: float, cluster) -> list:
    """The hierarchical all-reduce: reduce to each node's first GPU, ring among the first GPUs,
    send the result back inside each node (empty rounds left out)."""
    g, nodes = cluster.gpus_per_node, cluster.nodes
    leaders = np.arange(nodes) * g
    members = np.arange(nodes * g).reshape(nodes, g)[:, 1:].ravel()  # node by node
    to_leader = np.repeat(leaders, g - 1)
    rounds = [(members, to_leader, n)] if g > 1 else []
    if nodes > 1:
        rounds += ring(leaders, n, 2 * (nodes - 1))
    if g > 1:
        rounds.append((to_leader, members, n))
    return rounds
