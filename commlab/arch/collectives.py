"""One entry point for the all-reduce algorithms, and the two halves of the ring for reuse.

``allreduce(comm, tensor, algorithm="ring", op="sum", **kw)`` reduces ``tensor`` over all
ranks in place and returns it. Any shape (flattened inside, the shape is kept), any length
(0, fewer elements than ranks, not divisible), any world size, any dtype torch can add in
(fp32, fp64, fp16, bf16, integers; low precision accumulates in its own dtype).
ops: sum, avg (sum, then divided by the number of ranks), max, min, prod.

=================  ===============================================  ==================
algorithm          module                                           keyword arguments
=================  ===============================================  ==================
native             the runtime's own (``comm.all_reduce``)           none
naive              ``naive.py``: all to a root and back              none
ring               ``ring.py``: reduce-scatter + all-gather          segments=1
tree               ``tree.py``: pipelined binary tree                segments=4
double_tree        ``tree.py``: two complementary trees              segments=4
halving_doubling   ``halving_doubling.py``: Rabenseifner             none
hierarchical       ``hierarchical.py``: inside nodes, then across    group_size, inner, inner's
=================  ===============================================  ==================

Those and any other registered all-reduce (:func:`commlab.arch.register_allreduce`): ALGORITHMS
and COSTS read the one registry, :data:`commlab.arch.algorithms.ALLREDUCES`, when asked.
All but native also take ``ranks=`` (run over that group of ranks only) and ``tag=``.
Each has its closed-form cost beside it (``cost`` in its module); :func:`cost` picks one by
name, with the same keyword arguments (native: how the clock charges the runtime's own).

``reduce_scatter(comm, tensor, op)`` returns this rank's summed chunk (chunk r of
``shard(numel, world_size, r)``), and ``all_gather(comm, chunk)`` joins every rank's chunk
again: the two halves of the ring, for ZeRO-style sharded optimizers and sharded servers.

``Trainer(arch="ring(segments=4)")`` builds an algorithm with its arguments as an architecture
object: :class:`commlab.arch.architectures.AllReduce`.
"""
from __future__ import annotations

from collections.abc import Mapping

import torch

from ..net import cost as net_cost
from ..runtime.comm import check_op
from . import hierarchical, ring  # noqa: F401 - hierarchical registers itself on import
from .algorithms import ALLREDUCES
from .chunks import bounds


class _Column(Mapping):
    """One column of the registry :data:`commlab.arch.algorithms.ALLREDUCES`, by name, read
    live: an all-reduce registered later is in it (``native``: the value for "native" first, or
    none)."""

    def __init__(self, part: str, native=False):
        self.part, self.native = part, native

    def _items(self) -> dict:
        head = {"native": None} if self.native else {}
        return head | {name: getattr(a, self.part) for name, a in ALLREDUCES.items()}

    def __getitem__(self, name):
        return self._items()[name]

    def __iter__(self):
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return repr(self._items())


ALGORITHMS = _Column("run", native=True)  # name -> run (None for the runtime's own)
COSTS = _Column("cost")  # name -> closed form


def cost(n: float, p: int, link, algorithm: str = "ring", **kw) -> float:
    """Closed-form seconds of ``allreduce(..., algorithm, **kw)`` on ``n`` bytes and ``p`` ranks."""
    if algorithm == "native":
        if kw:
            raise TypeError(f"the native all-reduce takes no keyword arguments, got {', '.join(kw)}")
        return net_cost.native("all_reduce", n, p, link)
    if algorithm not in COSTS:
        raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; valid: {', '.join(ALGORITHMS)}")
    return COSTS[algorithm](n, p, link, **kw)


def _flat(tensor: torch.Tensor):
    """A flat view of the tensor (a flat copy, written back by ``done()``, if it is not contiguous)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(tensor).__name__}")
    t = tensor.detach()
    if t.is_contiguous():
        return t.view(-1), lambda: None
    flat = t.reshape(-1).clone()
    return flat, lambda: t.copy_(flat.view(t.shape))


def _average(x: torch.Tensor, p: int) -> None:
    x.div_(p) if x.is_floating_point() else x.floor_divide_(p)


def _group(comm, ranks) -> int:
    return comm.world_size if ranks is None else len(ranks)


def flat_allreduce(comm, x: torch.Tensor, algorithm: str, op: str = "sum", **kw) -> torch.Tensor:
    """All-reduce a flat, contiguous 1-D tensor in place with one of ALGORITHMS (not native)."""
    if algorithm not in ALGORITHMS or algorithm == "native":
        valid = ", ".join(a for a in ALGORITHMS if a != "native")
        raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; valid: {valid}")
    ALGORITHMS[algorithm](comm, x, "sum" if op == "avg" else op, **kw)
    if op == "avg":
        _average(x, _group(comm, kw.get("ranks")))
    return x


def allreduce(comm, tensor: torch.Tensor, algorithm: str = "ring", op: str = "sum", **kw) -> torch.Tensor:
    """Reduce ``tensor`` over all ranks in place with the named algorithm; returns it."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; valid: {', '.join(ALGORITHMS)}")
    check_op(op)
    if algorithm == "native":
        if kw:
            raise TypeError(f"the native all-reduce takes no keyword arguments, got {', '.join(kw)}")
        return comm.all_reduce(tensor, op=op)
    flat, done = _flat(tensor)
    flat_allreduce(comm, flat, algorithm, op, **kw)
    done()
    return tensor


def shard(numel: int, world_size: int, rank: int) -> tuple[int, int]:
    """The (start, end) of rank's chunk of a flat vector of ``numel`` elements."""
    return bounds(numel, world_size)[rank]


def reduce_scatter(comm, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
    """Ring reduce-scatter: this rank's chunk of the reduced flat tensor (see :func:`shard`).

    ``tensor`` is the work buffer: when it is contiguous the result is a view into it, and
    its other chunks are left holding partial results."""
    check_op(op)
    flat, _ = _flat(tensor)
    chunk = ring.reduce_scatter(comm, flat, "sum" if op == "avg" else op)
    if op == "avg":
        _average(chunk, comm.world_size)
    return chunk


def all_gather(comm, chunk: torch.Tensor) -> torch.Tensor:
    """Ring all-gather: every rank's chunk (flattened; lengths may differ by rank), joined
    in rank order into one flat tensor."""
    flat, _ = _flat(chunk)
    return torch.cat(ring.all_gather_pieces(comm, flat))
