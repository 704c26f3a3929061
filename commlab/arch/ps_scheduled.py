"""A parameter server that takes a step's gradient in scheduled messages (P3, ByteScheduler over PS).

Without a schedule a worker pushes its whole gradient once per step (:mod:`commlab.arch.ps`).
With one, the step is cut into ``messages``: message m lists ranges [start, stop) of the flat
parameter vector (``model.parameters()`` order), in the order every rank sends them (the
schedule's dispatch, :mod:`commlab.schedule.dispatch`, computed once before any rank starts).
Server s owns the elements of shard s (``torch.tensor_split``, as unscheduled); its part of
message m is the message's ranges clipped to the shard. For each message, in order::

    push:  every worker sends its gradient on the part to the part's server      (one tensor)
    apply: the server averages the W pushes (in worker order) and steps SGD on the part
    pull:  the server sends the part's new parameters back to every worker

SGD (momentum, weight decay) is elementwise, so stepping part by part gives the parameters
one step of the whole shard gives, bit for bit: each part is its own leaf tensor with its own
``torch.optim.SGD``. A worker leaves by sending every server an empty tensor. BSP only:
every message of a step goes to every worker. Bytes per step and worker: its gradient up and
its parameters down, as unscheduled; messages: one push and one pull per (message, server
with a part), so a schedule of many small messages pays the per-message latency many times.
"""
from __future__ import annotations

import torch

from .ps import PULL_TAG, PUSH_TAG
from .ps_codec import PSCodec
from .ps_layout import ServerPlacement


def shard_bounds(layout: ServerPlacement, total: int) -> list[tuple[int, int]]:
    """[lo, hi) of each shard in the flat vector (the pieces ``torch.tensor_split`` makes)."""
    sizes = [p.numel() for p in layout.pieces(torch.empty(total, device="meta"))]
    out, lo = [], 0
    for n in sizes:
        out.append((lo, lo + n))
        lo += n
    return out


def parts(messages, bounds) -> list[dict[int, list[tuple[int, int]]]]:
    """For each message, {shard: its ranges clipped to that shard} (shards with none left out)."""
    out = []
    for ranges in messages:
        per = {}
        for s, (lo, hi) in enumerate(bounds):
            clipped = [(max(a, lo), min(b, hi)) for a, b in ranges if min(b, hi) > max(a, lo)]
            if clipped:
                per[s] = clipped
        out.append(per)
    return out


def _gather(flat: torch.Tensor, ranges) -> torch.Tensor:
    return torch.cat([flat[a:b] for a, b in ranges])


def run_scheduled_server(comm, params: torch.Tensor, workers: int, shards: int, messages, *, lr: float,
                         momentum: float = 0.0, weight_decay: float = 0.0) -> dict:
    """The loop of server rank ``comm.rank`` (extra-rank layout) until every worker has left."""
    layout = ServerPlacement(workers, shards)
    layout.check_world(comm)
    shard = layout.shard_of(comm.rank)
    if shard is None:
        raise ValueError(f"rank {comm.rank} is not a server rank ({layout.describe()})")
    flat = params.detach().reshape(-1)
    mine = [(m, p[shard]) for m, p in enumerate(parts(messages, shard_bounds(layout, flat.numel()))) if shard in p]
    if not mine:
        raise ValueError(f"shard {shard} holds no element any message carries")
    held = {m: _gather(flat, ranges).clone() for m, ranges in mine}
    optimizers = {m: torch.optim.SGD([t], lr=lr, momentum=momentum, weight_decay=weight_decay) for m, t in held.items()}
    order = sorted(range(workers), key=lambda w: ((w - shard) % workers, w))  # staggered, as unscheduled
    codec, updates, live = PSCodec(), 0, True
    while live:
        for m, ranges in mine:
            pushes = {w: comm.recv(w, PUSH_TAG) for w in order}
            left = [w for w, g in pushes.items() if g.numel() == 0]
            if left:
                if len(left) != workers or m != mine[0][0]:
                    raise RuntimeError(f"shard {shard}: workers {left} left in the middle of a step (message {m}); "
                                       "a scheduled server runs BSP, where every worker runs every step")
                live = False
                break
            held[m].grad = codec.combine([pushes[w] for w in sorted(pushes)], shard)
            optimizers[m].step()
            for work in [comm.isend(held[m].detach().clone(), w, PULL_TAG) for w in order]:
                work.wait()
        else:
            updates += 1
    for m, ranges in mine:  # the final parameters of this shard, in flat order
        at = 0
        for a, b in ranges:
            flat[a:b] = held[m][at:at + b - a]
            at += b - a
    lo, hi = shard_bounds(layout, flat.numel())[shard]
    applied = [(w, k, 0) for k in range(1, updates + 1) for w in sorted(order)]  # BSP: never stale
    return {"role": "server", "shard": shard, "updates": updates, "clocks": [updates] * workers, "applied": applied,
            "dropped": [], "params": flat[lo:hi].clone(), "stats": comm.stats.snapshot(), "sim": comm.now}


class ScheduledPSClient:
    """A worker's side: ``exchange(m, grad_flat) -> params_flat`` for message m (flat over the
    message's ranges, in order), ``close()`` to leave."""

    def __init__(self, comm, workers: int, shards: int, messages, total: int):
        self.comm, self.layout = comm, ServerPlacement(workers, shards)
        self.layout.check_world(comm)
        bounds = shard_bounds(self.layout, total)
        self.parts = parts(messages, bounds)
        self.messages = [list(m) for m in messages]
        self.local = []  # per message, {shard: its part as ranges of the message's own flat vector}
        for ranges, per in zip(self.messages, self.parts):
            starts = [sum(b - a for a, b in ranges[:i]) for i in range(len(ranges))]
            self.local.append({s: [(o + max(a, bounds[s][0]) - a, o + min(b, bounds[s][1]) - a)
                                   for (a, b), o in zip(ranges, starts) if min(b, bounds[s][1]) > max(a, bounds[s][0])]
                               for s in per})

    def exchange(self, m: int, grad: torch.Tensor) -> torch.Tensor:
        """Push message m's gradient (its ranges concatenated) to its servers; the new parameters."""
        r, S = self.comm.rank, self.layout.shards
        mine = self.local[m]  # in the message's coordinates: no buffer as long as the whole model
        order = sorted(mine, key=lambda s: ((s - r) % S, s))
        sends = [self.comm.isend(_gather(grad, mine[s]), self.layout.server_rank(s), PUSH_TAG) for s in order]
        out = torch.empty_like(grad)  # every element is in exactly one shard's part
        for s in sorted(mine, key=lambda s: ((r - s) % self.layout.workers, s)):
            new = self.comm.recv(self.layout.server_rank(s), PULL_TAG)
            at = 0
            for a, b in mine[s]:
                out[a:b] = new[at:at + b - a]
                at += b - a
        for work in sends:
            work.wait()
        return out

    def close(self) -> None:
        """Send every server an empty goodbye message (staggered from this rank's shard)."""
        bye = torch.empty(0)
        works = [self.comm.isend(bye, self.layout.server_rank((self.comm.rank + j) % self.layout.shards), PUSH_TAG)
                 for j in range(self.layout.shards)]
        for work in works:
            work.wait()
