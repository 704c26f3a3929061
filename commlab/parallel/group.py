"""A group of ranks that talk among themselves: the tensor-, pipeline- or data-parallel ranks
of a layout (Megatron-LM's process groups), as a view on one rank's :class:`~commlab.runtime.Comm`.

``Group(comm, ranks, tag)``: ``ranks`` are global ranks in group order (this rank among them),
``tag`` keeps its messages apart from other groups'. Its collectives are the ring algorithms of
:mod:`commlab.arch.ring` run over ``ranks`` only, so they are charged on the clock and counted in
``comm.stats`` like any other message (a ring all-reduce of n bytes over t ranks: each rank sends
2 (t-1) n / t bytes); point-to-point messages take the index within the group.
"""
from __future__ import annotations

import torch

from ..arch import ring
from ..arch.chunks import bounds


class Group:
    """A view on ``comm`` restricted to ``ranks`` (group order), its messages tagged ``tag``; ring collectives."""
    def __init__(self, comm, ranks, tag: int = 0):
        ranks = tuple(int(r) for r in ranks)
        if comm.rank not in ranks:
            raise ValueError(f"rank {comm.rank} is not in the group {ranks}")
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"a group lists each rank once, got {ranks}")
        self.comm, self.ranks, self.tag = comm, ranks, tag
        self.index = ranks.index(comm.rank)
        self.size = len(ranks)

    def all_reduce(self, x: torch.Tensor, op: str = "sum") -> torch.Tensor:
        """Ring all-reduce of ``x`` over the group (sum or avg), in place; returns x."""
        if op not in ("sum", "avg"):
            raise ValueError(f"a group all-reduce takes op 'sum' or 'avg', got {op!r}")
        if self.size == 1:
            return x
        work = x.detach().view(-1) if x.is_contiguous() else x.detach().reshape(-1).clone()
        ring.allreduce(self.comm, work, "sum", ranks=self.ranks, tag=self.tag)
        if op == "avg":
            work.div_(self.size)
        if not x.is_contiguous():
            x.detach().copy_(work.view(x.shape))
        return x

    def reduce_scatter(self, x: torch.Tensor, op: str = "sum") -> torch.Tensor:
        """This rank's chunk (chunk ``index`` of :func:`chunks` of the flat x) of the reduced x;
        x is used as the work buffer."""
        if op not in ("sum", "avg"):
            raise ValueError(f"a group reduce-scatter takes op 'sum' or 'avg', got {op!r}")
        flat = x.detach().view(-1) if x.is_contiguous() else x.detach().reshape(-1).clone()
        out = ring.reduce_scatter(self.comm, flat, "sum", ranks=self.ranks, tag=self.tag) if self.size > 1 else flat
        return out / self.size if op == "avg" else out

    def all_gather(self, chunk: torch.Tensor, numel: int) -> torch.Tensor:
        """Join every rank's chunk of a flat vector of ``numel`` elements (chunked as
        :func:`chunks`) into that vector, in group order."""
        a, b = self.chunk(numel)
        if chunk.numel() != b - a:
            raise ValueError(f"rank {self.comm.rank}: chunk of {chunk.numel()} elements, expected {b - a} "
                             f"(chunk {self.index} of {numel} over {self.size} ranks)")
        out = torch.empty(numel, dtype=chunk.dtype, device=chunk.device)
        out[a:b] = chunk.reshape(-1)
        return ring.all_gather(self.comm, out, ranks=self.ranks, tag=self.tag) if self.size > 1 else out

    def chunk(self, numel: int, index: int | None = None) -> tuple[int, int]:
        """[start, stop) of rank ``index``'s (this rank's by default) chunk of ``numel`` elements."""
        return bounds(numel, self.size)[self.index if index is None else index]

    def send(self, x: torch.Tensor, to: int) -> None:
        """Send ``x`` to group index ``to`` (blocking)."""
        self.comm.send(x.detach().contiguous(), self.ranks[to], self.tag)

    def isend(self, x: torch.Tensor, to: int):
        """Send ``x`` to group index ``to`` without waiting; returns the work handle."""
        return self.comm.isend(x.detach().contiguous(), self.ranks[to], self.tag)

    def recv(self, frm: int) -> torch.Tensor:
        """Receive a tensor from group index ``frm``."""
        return self.comm.recv(self.ranks[frm], self.tag)

    def __repr__(self) -> str:
        return f"Group(ranks={self.ranks}, index={self.index}, tag={self.tag})"
