"""Dispatch: when each message of a plan goes, on one worker's communication stream.

A worker has two streams. The compute stream runs backward from layer L-1 down to 0, so layer l's
gradient is ready at ``ready(l) = sum_{k >= l} t_b(k)`` after backward starts
(:meth:`~commlab.schedule.profile.Profile.ready`). The communication stream sends one message at
a time; a message takes ``comm_time(nbytes)`` (a collective's closed form, or a measured time).

* Buckets (first-come first-served, :func:`fifo`): bucket k starts when its last piece is ready
  and bucket k-1 is done, ``tau_c(k) = max(tau_c(k-1) + t_c(k-1), ready(k))``. With one bucket
  per layer this is WFBP's recurrence: tau_c(L-1) = t_b(L-1), tau_c(l) = max(tau_c(l+1) +
  t_c(l+1), tau_b(l) + t_b(l)).
* Priority with a credit (:func:`by_priority`): whenever the stream is free, the ready pieces
  of the lowest layers go together, as many as fit in ``credit`` bytes (at least one); if none
  is ready the stream waits for the next.

:func:`iteration` turns a dispatch into seconds per iteration in steady state: forward, then
backward overlapped with the messages; the next forward starts when every message is back, or,
for a plan with ``forward_waits``, layer by layer as each layer's last message arrives::

    f_end(-1) = B = sum_l t_b(l),   f_end(l) = max(f_end(l-1), arrive(l)) + t_f(l),   t_iter = f_end(L-1)

(every message of iteration k is back before forward k+1 ends, so iteration k+1's messages find
the stream free when its backward starts, and each iteration is the same). Both executors use
these functions: the real one (:mod:`commlab.schedule.engine`) runs the messages
:func:`dispatch` lists, the simulator (:mod:`commlab.sim`) times them on a cluster.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass


@dataclass(frozen=True)
class Message:
    """One message: indices of the plan's pieces it carries, their layers and bytes, and when
    it was ready, started and ended (seconds from the start of backward)."""

    pieces: tuple
    layers: tuple
    nbytes: int
    ready: float
    start: float
    end: float


def fifo(ready, durations, start: float = 0.0) -> list[tuple[float, float]]:
    """(start, end) of messages sent in order, each when ready and the previous one is done."""
    out, t = [], start
    for r, d in zip(ready, durations):
        s = max(t, r)
        t = s + d
        out.append((s, t))
    return out


def _message(plan, chosen, ready, start, end) -> Message:
    pieces = plan.pieces
    return Message(tuple(chosen), tuple(sorted({pieces[i].layer for i in chosen})),
                   sum(pieces[i].nbytes for i in chosen), ready, start, end)


def by_priority(plan, piece_ready, comm_time, start: float = 0.0) -> list[Message]:
    """Dispatch a plan without buckets: lowest layer first, up to ``plan.credit`` bytes a message."""
    pieces = plan.pieces
    arriving = sorted(range(len(pieces)), key=lambda i: (piece_ready[i], i))
    queue, out, t, k = [], [], start, 0
    while k < len(arriving) or queue:
        if not queue:
            t = max(t, piece_ready[arriving[k]])
        while k < len(arriving) and piece_ready[arriving[k]] <= t:
            i = arriving[k]
            heapq.heappush(queue, (pieces[i].layer, pieces[i].start, i))
            k += 1
        chosen = [heapq.heappop(queue)[2]]
        size = pieces[chosen[0]].nbytes
        while queue and size + pieces[queue[0][2]].nbytes <= plan.credit:
            chosen.append(heapq.heappop(queue)[2])
            size += pieces[chosen[-1]].nbytes
        end = t + comm_time(size)
        out.append(_message(plan, chosen, max(piece_ready[i] for i in chosen), t, end))
        t = end
    return out


def dispatch(plan, profile, comm_time, start: float = 0.0) -> list[Message]:
    """Every message of one iteration in the order the communication stream sends them."""
    layer_ready = profile.ready()
    piece_ready = [start + layer_ready[p.layer] for p in plan.pieces]
    if plan.buckets is None:
        return by_priority(plan, piece_ready, comm_time, start)
    ready = [max(piece_ready[i] for i in b) for b in plan.buckets]
    sizes = [sum(plan.pieces[i].nbytes for i in b) for b in plan.buckets]
    times = fifo(ready, [comm_time(n) for n in sizes], start)
    return [_message(plan, b, r, s, e) for b, r, (s, e) in zip(plan.buckets, ready, times)]


def arrivals(messages, layers: int) -> list[float]:
    """When each layer's last message is back (its parameters are up to date)."""
    out = [0.0] * layers
    for m in messages:
        for l in m.layers:
            out[l] = max(out[l], m.end)
    return out


def forward_spans(forward_s, backward_end: float, arrive, forward_waits: bool) -> list[tuple[float, float]]:
    """(start, end) of each layer of the next forward (``forward_s``: seconds per layer) after a
    backward that ends at ``backward_end``: layer by layer as parameters arrive
    (``forward_waits``), or all after the last arrival."""
    t = backward_end if forward_waits else max([backward_end, *arrive])
    out = []
    for f, a in zip(forward_s, arrive):
        start = max(t, a)
        t = start + f
        out.append((start, t))
    return out


def next_forward(forward_s, backward_end: float, arrive, forward_waits: bool) -> float:
    """When the next forward ends (:func:`forward_spans`)."""
    spans = forward_spans(forward_s, backward_end, arrive, forward_waits)
    return spans[-1][1] if spans else backward_end


def iteration(plan, profile, comm_time) -> tuple[float, list[Message]]:
    """Steady-state seconds per iteration of ``plan`` and its messages (from backward's start)."""
    messages = dispatch(plan, profile, comm_time)
    backward = sum(profile.backward_s)
    return next_forward(profile.forward_s, backward, arrivals(messages, profile.layers), plan.forward_waits), messages
