"""Ring all-reduce: reduce-scatter, then all-gather, around a ring (Patarasuk and Yuan 2009).

The p ranks of the group stand in a ring; position i sends only to i+1 and receives only
from i-1. The vector is cut into p chunks.

* Reduce-scatter: in step k = 0..p-2, position i sends chunk (i-k-1) mod p and adds the chunk
  (i-k-2) mod p that arrives into its own copy. After p-1 steps position i holds chunk i
  summed over all ranks.
* All-gather: in step k = 0..p-2, position i sends chunk (i-k) mod p and receives the chunk
  (i-k-1) mod p straight into place. After p-1 steps every rank holds every summed chunk.

Both phases are the same *pass*: send one chunk, then p-1 times take the chunk before it
from the left, absorb it (add, or keep), and forward it. With ``segments=s`` each chunk goes
as s messages, and a segment is forwarded as soon as it has been absorbed, so adding one
segment overlaps with the transfer of the next (pipelining). Receives are posted two ahead,
into buffers kept between calls, so the next pieces travel while this one is being added.

Cost, per rank: 2(p-1) s messages of n/(ps) bytes each way, and in the alpha-beta model

    T_ring = 2 (p-1) s (alpha + n/(p s) beta) = 2 (p-1) s alpha + 2 (p-1)/p n beta.

Every link of the ring is busy all the time, so the bandwidth term 2(p-1)/p n beta is the
lower bound for any all-reduce; the price is p-1 latencies in each phase. Segments add
latency in the model (where adding is free) and pay off on real hardware, where they hide
the additions behind the transfers (:func:`cost`).
"""
from __future__ import annotations

import torch

from .. import checks
from ..net.cost import check_ranks
from ..net.link import get_link
from .chunks import absorb, incoming, members, split, wait_all, workspace


def check_segments(s: int) -> None:
    """ValueError unless ``s`` (pipeline segments per chunk) is an integer >= 1."""
    if not checks.is_int(s) or s < 1:
        raise ValueError(f"segments must be an integer >= 1, got {s!r}")


def cost(n: float, p: int, link, segments: int = 1) -> float:
    """Closed-form seconds of :func:`allreduce`: 2 (p - 1) s T(n / (p s)), each of the p chunks
    sent as ``segments`` messages."""
    check_ranks(p)
    check_segments(segments)
    return 2 * (p - 1) * segments * get_link(link).time(n / (p * segments))


def _pass(comm, segs, first, ranks, i, op, tag):
    """Send chunk ``first`` of ``segs`` (chunks as lists of segments) to the next rank; then
    take chunks first-1, first-2, ... from the previous one, absorb each segment with ``op``
    (copy for op=None) and forward it, except the last chunk, which stays here."""
    p = len(ranks)
    nxt, prv = ranks[(i + 1) % p], ranks[(i - 1) % p]
    order = [((first - k) % p, j) for k in range(1, p) for j in range(len(segs[(first - k) % p]))]
    sends = [comm.isend(seg, nxt, tag) for seg in segs[first]]
    for m, got in enumerate(incoming(comm, prv, _landing(comm, segs, order, op), tag)):
        c, j = order[m]
        segs[c][j] = absorb(comm, got, prv, segs[c][j], op)
        if c != (first + 1) % p:  # the last chunk to arrive stays here
            sends.append(comm.isend(segs[c][j], nxt, tag))
    wait_all(sends)


def _landing(comm, segs, order, op, depth=2):
    """Where each message lands: a copy lands in place; a segment to be reduced lands in one
    of depth + 1 scratch buffers, taken in turn (a buffer is reused once its sum is done)."""
    if op is None:
        return [segs[c][j] for c, j in order]
    size = max((segs[c][j].numel() for c, j in order), default=0)
    scratch = [workspace(comm, segs[0][0], size, ("ring", k)) for k in range(depth + 1)] if order else []
    return [scratch[m % (depth + 1)][:segs[c][j].numel()] for m, (c, j) in enumerate(order)]


def _segmented(x, p, segments):
    if not checks.is_int(segments) or segments < 1:
        raise ValueError(f"segments must be an integer >= 1, got {segments!r}")
    return [split(chunk, segments) for chunk in split(x, p)]


def reduce_scatter(comm, x: torch.Tensor, op: str = "sum", ranks=None, segments: int = 1,
                   tag: int = 0) -> torch.Tensor:
    """Reduce the flat tensor ``x`` over the group so that position i holds chunk i of the
    result; returns that chunk (a view of ``x``; x's other chunks are left holding partial
    results). Chunks follow ``chunks.bounds(x.numel(), len(ranks))``."""
    ranks, i = members(comm, ranks)
    p = len(ranks)
    segs = _segmented(x, p, segments)
    if p > 1:
        _pass(comm, segs, (i - 1) % p, ranks, i, op, tag)
    return split(x, p)[i]


def all_gather(comm, x: torch.Tensor, ranks=None, segments: int = 1, tag: int = 0) -> torch.Tensor:
    """Position i holds chunk i of the flat tensor ``x``; afterwards every rank holds all of
    it (in place; returns x)."""
    ranks, i = members(comm, ranks)
    p = len(ranks)
    if p > 1:
        _pass(comm, _segmented(x, p, segments), i, ranks, i, None, tag)
    return x


def all_gather_pieces(comm, piece: torch.Tensor, ranks=None, tag: int = 0) -> list[torch.Tensor]:
    """Ring all-gather of pieces whose lengths a rank does not know in advance (each rank's
    piece may have its own length): returns every position's piece, as a list by position."""
    ranks, i = members(comm, ranks)
    p = len(ranks)
    segs = [[None] for _ in range(p)]
    segs[i] = [piece.reshape(-1)]
    if p > 1:
        _pass(comm, segs, i, ranks, i, None, tag)
    return [s[0] for s in segs]


def replay_all_gather_pieces(comms, pieces) -> None:
    """What :func:`all_gather_pieces` over all ranks charges, without its messages (the threads
    runtime's ``Comm.gather_shared`` delivers the pieces at one rendezvous): rank i sends its
    piece to rank i + 1, then for m = 1..N-1 receives piece i - m from rank i - 1 and forwards
    it (all but the last); each rank's counters and clock take its sends and receives in that
    order, each message departing when its sender sent it, as :func:`_pass` would."""
    p = len(comms)
    depart = [comms[i]._outgoing(pieces[i], (i + 1) % p) for i in range(p)]
    for m in range(1, p):
        forwarded = []
        for i in range(p):
            prv, piece = (i - 1) % p, pieces[(i - m) % p]
            comms[i]._incoming(prv, piece, depart[prv])
            if m < p - 1:
                forwarded.append(comms[i]._outgoing(piece, (i + 1) % p))
        depart = forwarded


def allreduce(comm, x: torch.Tensor, op: str = "sum", ranks=None, segments: int = 1, tag: int = 0) -> torch.Tensor:
    """Ring all-reduce of the flat tensor ``x`` in place: reduce-scatter, then all-gather."""
    reduce_scatter(comm, x, op, ranks, segments, tag)
    return all_gather(comm, x, ranks, segments, tag)
