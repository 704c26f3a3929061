"""The message level: a discrete-event loop over point-to-point messages and their ports.

A :class:`Dag` holds messages, each from an out-port to an in-port, lasting ``dur`` seconds on
its link, not sent before ``earliest``, and after the messages it depends on have arrived
(a ring forwards a chunk once it has it; a server pulls once every push is in). The loop follows
:mod:`commlab.net.clock`'s rules, in time order::

    ready   = max(earliest, arrival of every dependency)
    depart  = max(ready, out_free[o]);            out_free[o] = depart + dur
    arrive  = max(depart, in_free[i]) + dur;      in_free[i]  = arrive

A port sends one message at a time in the order they become ready, and takes one at a time in
the order they leave, so a server that every worker pushes to, or a node's network card, is a
queue whose waiting shows in the times. Three kinds of event: a message becomes ready, leaves
(claims the receiver), arrives (releases what depends on it); a message whose out-port and
in-port are free when it becomes ready is handled at once, without going through the heap.

A **join** is a bookkeeping message of zero duration on a port of its own ("all of these have
arrived"), so that n messages waiting for m others need n + m dependencies, not n m.
"""
from __future__ import annotations

import heapq

import numpy as np

JOIN_PORT = 0  # out- and in-port 0 carry joins only: zero duration, never busy


class Dag:
    """Messages (ports, durations, earliest send times) and dependencies, added in blocks."""

    def __init__(self):
        self._blocks: list[tuple] = []
        self._frm: list[np.ndarray] = []
        self._to: list[np.ndarray] = []
        self.count = 0
        self.joins = 0

    def add(self, out_port, in_port, dur, earliest=0.0) -> np.ndarray:
        """Add messages (arrays or scalars, broadcast together); returns their ids."""
        out_port, in_port, dur, earliest = np.broadcast_arrays(np.asarray(out_port, dtype=np.int64),
                                                               np.asarray(in_port, dtype=np.int64),
                                                               np.asarray(dur, dtype=float),
                                                               np.asarray(earliest, dtype=float))
        ids = np.arange(self.count, self.count + out_port.size).reshape(out_port.shape)
        self._blocks.append((out_port.ravel(), in_port.ravel(), dur.ravel(), earliest.ravel()))
        self.count += out_port.size
        return ids

    def after(self, before, then) -> None:
        """Each message of ``then`` waits for the arrival of the matching one of ``before``
        (arrays broadcast together)."""
        before, then = np.broadcast_arrays(np.asarray(before, dtype=np.int64), np.asarray(then, dtype=np.int64))
        self._frm.append(before.ravel())
        self._to.append(then.ravel())

    def join(self, deps, earliest: float = 0.0) -> int:
        """A message that arrives when every one of ``deps`` has (and not before ``earliest``)."""
        j = int(self.add(JOIN_PORT, JOIN_PORT, 0.0, earliest)[()])
        self.joins += 1
        self.after(np.asarray(deps, dtype=np.int64), j)
        return j

    def run(self) -> tuple[np.ndarray, np.ndarray, int]:
        """Time every message: (depart, arrive) arrays by id, and the number of events handled."""
        n = self.count
        if n == 0:
            return np.zeros(0), np.zeros(0), 0
        out_p, in_p, dur, earliest = (np.concatenate(c) for c in zip(*self._blocks))
        frm = np.concatenate(self._frm) if self._frm else np.zeros(0, np.int64)
        to = np.concatenate(self._to) if self._to else np.zeros(0, np.int64)
        order = np.argsort(frm, kind="stable")
        succ = to[order].tolist()
        ptr = np.searchsorted(frm[order], np.arange(n + 1)).tolist()
        waiting = np.bincount(to, minlength=n).tolist()
        ports = int(max(out_p.max(), in_p.max())) + 1
        return _loop(out_p.tolist(), in_p.tolist(), dur.tolist(), earliest.tolist(), succ, ptr, waiting, ports)


def _loop(out_p, in_p, dur, earliest, succ, ptr, waiting, ports):
    """The event loop. The event being handled stays on top of the heap until its first
    follow-up replaces it (one sift instead of a pop and a push)."""
    n = len(dur)
    out_free, in_free = [0.0] * ports, [0.0] * ports
    depart, arrive = [0.0] * n, [0.0] * n
    push, pop, replace = heapq.heappush, heapq.heappop, heapq.heapreplace
    heap = [(earliest[m], 0, m) for m in range(n) if waiting[m] == 0]
    heapq.heapify(heap)
    events = 0
    while heap:
        t, kind, m = heap[0]
        events += 1
        if kind == 2:  # arrives: release what waits for it
            arrive[m] = t
            top = True
            for k in range(ptr[m], ptr[m + 1]):
                s = succ[k]
                waiting[s] -= 1
                if waiting[s]:
                    continue
                e = earliest[s]
                if e > t:
                    ev = (e, 0, s)
                else:  # ready now: claim the out-port, and the in-port if it leaves now
                    o = out_p[s]
                    d = out_free[o] if out_free[o] > t else t
                    out_free[o] = d + dur[s]
                    depart[s] = d
                    if d > t:
                        ev = (d, 1, s)
                    else:
                        i = in_p[s]
                        a = (in_free[i] if in_free[i] > t else t) + dur[s]
                        in_free[i] = a
                        ev = (a, 2, s)
                if top:
                    replace(heap, ev)
                    top = False
                else:
                    push(heap, ev)
            if top:
                pop(heap)
        elif kind == 0:  # ready: claim the out-port
            o = out_p[m]
            d = out_free[o] if out_free[o] > t else t
            out_free[o] = d + dur[m]
            depart[m] = d
            if d > t:
                replace(heap, (d, 1, m))
            else:
                i = in_p[m]
                a = (in_free[i] if in_free[i] > t else t) + dur[m]
                in_free[i] = a
                replace(heap, (a, 2, m))
        else:  # leaves: claim the receiver's in-port
            i = in_p[m]
            a = (in_free[i] if in_free[i] > t else t) + dur[m]
            in_free[i] = a
            replace(heap, (a, 2, m))
    if any(waiting):
        stuck = next(m for m in range(n) if waiting[m])
        raise ValueError(f"the message graph deadlocks: message {stuck} waits for {waiting[stuck]} that never arrive")
    return np.asarray(depart), np.asarray(arrive), events
