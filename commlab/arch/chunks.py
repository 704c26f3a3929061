"""What every all-reduce algorithm here shares: cutting a flat vector into pieces, combining
a received piece into one's own, and checking that it is the piece one expected.

Each algorithm works in place on a flat, contiguous 1-D tensor ``x`` (``collectives.allreduce``
flattens any shape and restores it) over a *group* of ranks ``ranks``, all of them by default.
A rank's place in the group is its *position* ``i = ranks.index(comm.rank)``; the hierarchical
all-reduce runs an inner algorithm over the group of node leaders.

Pieces are balanced: ``n`` elements cut into ``k`` pieces give the first ``n mod k`` pieces
``ceil(n / k)`` elements and the rest ``floor(n / k)``. A piece may be empty (fewer elements
than pieces); it is still sent, so that every rank sends and receives the same number of
messages whatever its tensor's length.

That is what makes a mismatch safe. Every receive is checked against the receiver's own cut
(:func:`absorb`): a rank whose tensor has a different number of elements or another dtype
makes a neighbour raise a ValueError naming both ranks, and ``launch`` turns it into a
RankError in seconds, never a hang or a silently wrong sum. Shapes are not compared: two
tensors with the same number of elements are reduced element by element in memory order,
as torch.distributed's own all-reduce does.
"""
from __future__ import annotations

import weakref

import torch

_WORKSPACES = weakref.WeakKeyDictionary()  # comm -> {name: buffer}


def bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """Balanced cut of ``n`` elements into ``parts`` pieces, as (start, end) pairs."""
    q, r = divmod(n, parts)
    edges = [k * q + min(k, r) for k in range(parts + 1)]
    return list(zip(edges[:-1], edges[1:]))


def split(x: torch.Tensor, parts: int) -> list[torch.Tensor]:
    """Views of the 1-D tensor ``x`` along :func:`bounds`."""
    return [x[a:b] for a, b in bounds(x.numel(), parts)]


def workspace(comm, like: torch.Tensor, numel: int, name) -> torch.Tensor:
    """A work buffer of ``numel`` elements with like's dtype and device, kept for this rank
    between calls under ``name`` (grown when too small). Fresh memory is not free: touching a
    new 16 MB costs page faults that take, on a virtual machine, as long as sending it over
    loopback. An algorithm uses each name for one purpose at a time."""
    bufs = _WORKSPACES.setdefault(comm, {})
    key = (name, like.dtype, like.device)
    if key not in bufs or bufs[key].numel() < numel:
        bufs[key] = like.new_empty(max(numel, 1))
    return bufs[key][:numel]


def members(comm, ranks=None) -> tuple[list[int], int]:
    """The group as a list of ranks, and this rank's position in it."""
    ranks = list(range(comm.world_size)) if ranks is None else list(ranks)
    if comm.rank not in ranks:
        raise ValueError(f"rank {comm.rank} is not in the group {ranks}")
    return ranks, ranks.index(comm.rank)


def combine_(acc: torch.Tensor, x: torch.Tensor, op: str) -> torch.Tensor:
    """acc <- acc (op) x, in place; op is sum, prod, max or min."""
    if op == "sum":
        return acc.add_(x)
    if op == "prod":
        return acc.mul_(x)
    if op == "max":
        return torch.maximum(acc, x, out=acc)
    if op == "min":
        return torch.minimum(acc, x, out=acc)
    raise ValueError(f"unknown reduce op {op!r}; valid ops here: sum, prod, max, min")


def absorb(comm, got: torch.Tensor, src: int, into: torch.Tensor | None, op: str | None = None):
    """Check the piece ``got`` that came from ``src`` against ``into``, the piece this rank
    holds there, then combine it into ``into`` with ``op`` (or copy it, op=None).

    ``into=None`` means the size is not known here (an all-gather of pieces of any length):
    the received tensor itself is kept. Returns the piece as this rank now holds it."""
    if into is None:
        return got.reshape(-1)
    if got.numel() != into.numel() or got.dtype != into.dtype:
        raise ValueError(
            f"all-reduce: rank {comm.rank} got {got.numel()} {got.dtype} elements from rank {src} where its "
            f"own tensor has {into.numel()} {into.dtype}; the tensor must have the same number of elements "
            f"and dtype on every rank (ranks {src} and {comm.rank} differ, or a rank before them does)")
    if op is None:
        return into if got is into else into.copy_(got.view(into.shape))
    return combine_(into, got.view(into.shape), op)


def incoming(comm, src: int, intos, tag: int = 0, depth: int = 2):
    """Receive one message from ``src`` for each buffer in ``intos`` (None: allocate it), in
    order, yielding each when it has arrived. ``depth`` receives are kept posted ahead, so
    that on Gloo the next payloads travel while the caller works on the current one."""
    intos = list(intos)
    posted = [comm.irecv(src, tag, out=b) for b in intos[:depth]]
    for k in range(len(intos)):
        if k + depth < len(intos):
            posted.append(comm.irecv(src, tag, out=intos[k + depth]))
        yield posted[k].wait()
        posted[k] = None


def wait_all(works) -> None:
    """Wait for non-blocking sends: a buffer may be written again only once its send is done."""
    for w in works:
        w.wait()
