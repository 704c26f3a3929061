"""Every point-to-point message of a run of collectives, as a :class:`~commlab.sim.events.Dag`.

An all-reduce's messages are the ``program`` of its registration (:mod:`commlab.arch.algorithms`):
rounds of (src, dst, bytes) (:mod:`commlab.arch.rounds`), which :func:`replay` turns into messages
and dependencies here. A hop inside a node goes GPU port to GPU port on the intra link, a hop
between nodes NIC to NIC on the inter link. The library's programs:

* ``ring``: one ring through all P GPUs (rank r to r+1, node after node), 2 (P-1) steps; at step
  s every position sends one chunk of n/P bytes, the one it received at step s-1 (the first it
  sends is its own).
* ``hierarchical``: the g-1 other GPUs of a node send n bytes to its first GPU (whose in-port
  takes them one at a time), the first GPUs run the ring above among themselves, and send the
  result back one GPU at a time.

The parameter server's program is the simulator's own (it is an architecture, not an all-reduce):

* ``ps``: a ring reduce-scatter inside each node (g-1 steps of n/g), the node's NIC pushes piece
  j of S to server (w + j) mod S, server s returns its sum to worker nodes (s + i) mod N in turn
  once all N pieces are in, then a ring all-gather inside the node. One worker node: reduce-
  scatter and all-gather only (BytePS's non-distributed mode).

A rank starts a collective when its gradients are ready (``earliest``) and it is done with the
previous one: collectives on one rank run one after another, as on one communication stream.

Ports take messages first come, first served. This equals the closed forms of
:mod:`commlab.sim.closed_forms` for one collective (tests/test_sim_programs.py), with one
exception: with more servers than worker nodes, a worker's pulls need not wait for each other
as :func:`commlab.arch.ps_layout.ps_sharded` (whose ranks take messages in program order)
assumes, and the message level is faster. Across collectives it can also be faster than the
sum of closed forms: a worker that has its pull back pushes its next message while a busy
server still sends the others theirs.

Ports: 0 for joins; GPU r sends on 1 + 2r and receives on 2 + 2r; node w's NIC and server s's
card follow.
"""
from __future__ import annotations

import numpy as np

from ..arch.algorithms import ALLREDUCES, names
from .events import Dag


class ClusterMap:
    """Where each GPU, NIC and server port is, and what a hop between two GPUs costs."""

    def __init__(self, cluster, servers: int = 0):
        self.cluster, self.servers = cluster, servers
        p, g = cluster.gpus, cluster.gpus_per_node
        self.node = np.arange(p) // g
        self.nic = 1 + 2 * p  # node w: out 1 + 2p + 2w, in + 1
        self.srv = self.nic + 2 * cluster.nodes

    def hops(self, src, dst, nbytes: float):
        """(out-port, in-port, seconds) of messages of ``nbytes`` from GPUs ``src`` to GPUs ``dst``."""
        src, dst = np.asarray(src), np.asarray(dst)
        same = self.node[src] == self.node[dst]
        c = self.cluster
        out = np.where(same, 1 + 2 * src, self.nic + 2 * self.node[src])
        inn = np.where(same, 2 + 2 * dst, self.nic + 1 + 2 * self.node[dst])
        dur = np.where(same, c.intra.time(nbytes), c.inter.time(nbytes))
        return out, inn, dur


def ring(dag: Dag, lay: ClusterMap, ranks, steps: int, chunk: float, start, earliest: float):
    """A ring pass over ``ranks`` (position j sends to j+1) of ``steps`` steps of ``chunk``
    bytes; ``start[j]``: the message position j waits for before its first send (or None).
    Returns, per position, the message whose arrival is its last receive."""
    ranks = np.asarray(ranks)
    q = len(ranks)
    out, inn, dur = lay.hops(ranks, np.roll(ranks, -1), chunk)
    ids = dag.add(np.tile(out, (steps, 1)), np.tile(inn, (steps, 1)), np.tile(dur, (steps, 1)), earliest)
    left = (np.arange(q) - 1) % q
    if steps > 1:
        dag.after(ids[:-1][:, left], ids[1:])
    if start is not None:
        dag.after(start, ids[0])
    return ids[-1][left]


def _starts(prev, ranks):
    """What each of ``ranks`` waits for before its first send: its last message of the previous
    collective (None for the first)."""
    return None if prev is None else np.asarray(prev)[np.asarray(ranks)]


def replay(dag: Dag, lay: ClusterMap, rounds, prev, earliest: float):
    """Add an all-reduce's program (:mod:`commlab.arch.rounds`: rounds of (src, dst, bytes)) to
    ``dag``: a rank's sends of a round wait for what it received since its previous send (the
    first for ``prev``, its end of the previous collective, or None); per GPU, the message (or the
    join of several) after which its part is over: what it received in its last round that
    brought it anything."""
    p = lay.cluster.gpus
    wait = np.full(p, -1, dtype=np.int64) if prev is None else np.array(prev, dtype=np.int64)
    done = wait.copy()
    for src, dst, nbytes in rounds:
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        if not src.size:
            continue
        out, inn, dur = lay.hops(src, dst, nbytes)
        ids = dag.add(out, inn, dur, earliest)
        waits = wait[src]
        if (waits >= 0).any():
            dag.after(waits[waits >= 0], ids[waits >= 0])
        wait[src] = -1
        order = np.argsort(dst, kind="stable")
        ranks, first, count = np.unique(dst[order], return_index=True, return_counts=True)
        got = ids[order][first]
        for k in np.flatnonzero((count > 1) | (wait[ranks] >= 0)):  # several to wait for: join them
            deps = ids[order][first[k]:first[k] + count[k]].tolist()
            old = wait[ranks[k]]
            got[k] = dag.join(([int(old)] if old >= 0 else []) + deps, earliest)
        wait[ranks] = got
        done[ranks] = got
    if (done < 0).any():
        raise ValueError(f"a program left GPU(s) {np.flatnonzero(done < 0).tolist()} without any message: an "
                         "all-reduce's program must deliver the result to every GPU")
    return done


def ps(dag, lay, n, prev, earliest):
    """Ring reduce-scatter in each node, NIC pushes to the S servers and pulls back, ring all-gather in the node
    (see the module doc); per GPU its last message."""
    c, s_count = lay.cluster, lay.servers
    g, nodes = c.gpus_per_node, c.nodes
    done = np.zeros(c.gpus, dtype=np.int64)
    node_ready = []  # per node: the message after which its NIC may push (or its GPUs all-gather)
    for w in range(nodes):
        ranks = np.arange(w * g, (w + 1) * g)
        if g > 1:
            rs = ring(dag, lay, ranks, g - 1, n / g, _starts(prev, ranks), earliest)
            node_ready.append(dag.join(rs, earliest))
        else:
            node_ready.append(None if prev is None else int(prev[ranks[0]]))
    if nodes > 1:
        piece = n / s_count
        t = c.inter.time(piece)
        nic_out = lay.nic + 2 * np.arange(nodes)
        pushes = np.zeros((nodes, s_count), dtype=np.int64)  # [worker, server]
        for w in range(nodes):
            order = (w + np.arange(s_count)) % s_count
            ids = dag.add(nic_out[w], lay.srv + 1 + 2 * order, t, earliest)
            if node_ready[w] is not None:
                dag.after(node_ready[w], ids)
            pushes[w, order] = ids
        pulled = [[] for _ in range(nodes)]
        for s in range(s_count):
            full = dag.join(pushes[:, s], earliest)
            order = (s + np.arange(nodes)) % nodes
            ids = dag.add(lay.srv + 2 * s, nic_out[order] + 1, t, earliest)
            dag.after(full, ids)
            for w, m in zip(order, ids):
                pulled[w].append(int(m))
        node_ready = [dag.join(pulled[w], earliest) for w in range(nodes)]
    for w in range(nodes):
        ranks = np.arange(w * g, (w + 1) * g)
        if g > 1:
            start = np.full(g, node_ready[w])
            done[ranks] = ring(dag, lay, ranks, g - 1, n / g, start, earliest)
        else:
            done[ranks] = node_ready[w]
    return done


def pattern(cluster, arch: str):
    """``pattern(dag, lay, n, prev, earliest)`` of one collective: the parameter server's, or the
    registered program of the cluster's all-reduce (ValueError for one registered without)."""
    if arch == "ps":
        return ps
    program = ALLREDUCES[cluster.allreduce].program if cluster.allreduce in ALLREDUCES else None
    if program is None:
        raise ValueError(f"level='message' replays an all-reduce's program, and allreduce={cluster.allreduce!r} "
                         f"has none; programs: {', '.join(names('program'))} (register one with "
                         "commlab.arch.register_allreduce(..., program=...)), or use level='closed'")
    return lambda dag, lay, n, prev, earliest: replay(dag, lay, program(n, cluster), prev, earliest)


def simulate(cluster, sizes, ready, arch: str = "allreduce", servers: int = 0):
    """Time a sequence of collectives of ``sizes`` bytes, the k-th not before ``ready[k]``, on
    every GPU of ``cluster``. Returns (start, end) per collective (first departure, last
    arrival over all ranks), the number of point-to-point messages and of events."""
    if cluster.gpus == 1 or not len(sizes):
        return [(r, r) for r in ready], 0, 0
    lay = ClusterMap(cluster, servers)
    one = pattern(cluster, arch)
    dag, prev, spans = Dag(), None, []
    for n, r in zip(sizes, ready):
        first = dag.count
        prev = one(dag, lay, float(n), prev, float(r))
        spans.append((first, dag.count, prev))
    depart, arrive, events = dag.run()
    times = []
    for first, last, done in spans:
        times.append((float(depart[first:last].min()), float(arrive[done].max())))
    return times, dag.count - dag.joins, events
