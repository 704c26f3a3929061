"""The one interface every algorithm talks to: :class:`Comm`.

A ``Comm`` is one rank's view of the world. It offers point-to-point messages
(``send``, ``recv``, ``recv_any``, ``isend``, ``irecv``) and the native collectives
(``all_reduce``, ``all_gather``, ``broadcast``, ``barrier``). Subclasses provide the
transport (threads in one process, or torch.distributed with Gloo or NCCL); this base
class adds what every transport shares:

* ``comm.stats``: bytes and messages sent and received by this rank (payload bytes, the
  tensor's ``numel * element_size``: what would really cross the wire).
* ``comm.clock``: a simulated clock (:class:`commlab.net.Clock`) when the run was given a
  network model, else ``None``. Every message advances it by the link model
  ``alpha + n * beta``; compute enters it through :meth:`compute`.

Native collectives are charged on the clock and in the counters as the ring algorithm
would be (Patarasuk and Yuan 2009): the transport's own algorithm is not visible to us.
"""
from __future__ import annotations

import torch

from .. import checks
from .stats import CommStats, nbytes

REDUCE_OPS = ("sum", "avg", "max", "min", "prod")


class Work:
    """Handle of a non-blocking operation; ``wait()`` returns its result (a tensor for irecv)."""

    def __init__(self, wait_fn):
        self._wait_fn = wait_fn
        self._done = False
        self._result = None

    def wait(self):
        """Block until the operation is done (once); its result, a tensor for irecv."""
        if not self._done:
            self._result = self._wait_fn()
            self._done = True
        return self._result


def binomial_children(relative_rank: int, world_size: int) -> list[int]:
    """Relative ranks a node sends to in a binomial-tree broadcast rooted at relative rank 0."""
    kids, step = [], 1
    while step < world_size:
        if relative_rank < step and relative_rank + step < world_size:
            kids.append(relative_rank + step)
        step *= 2
    return kids


def check_into(out: torch.Tensor, dtype, numel: int, rank: int, src: int, tag: int) -> None:
    """A message about to be received into ``out`` must have out's number of elements and dtype."""
    if out.numel() != numel or out.dtype != dtype:
        raise ValueError(f"rank {rank} receives into {out.numel()} {out.dtype} elements from rank {src} (tag {tag}), "
                         f"but rank {src} sent {numel} {dtype}: the two ranks disagree on the message's size")


def check_op(op: str) -> str:
    """``op`` if it is one of :data:`REDUCE_OPS` (sum, avg, max, min, prod), else ValueError."""
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown reduce op {op!r}; valid ops: {', '.join(REDUCE_OPS)}")
    return op


class Comm:
    """Base class of a rank's communicator. Subclasses implement the ``_transport_*`` hooks.

    Point-to-point: ``send(t, dst)``, ``recv(src) -> Tensor``, ``recv_any() -> (src, Tensor)``,
    ``isend(t, dst) -> Work``, ``irecv(src) -> Work``. A received tensor is new memory with
    the sender's shape and dtype, on this rank's device; or, with ``recv(src, out=buf)`` /
    ``irecv(src, out=buf)``, the preallocated ``buf``, which must then have the message's number
    of elements and dtype (else ValueError naming both ranks). Receiving into ``out`` saves the
    allocation, and on Gloo lets the payload arrive before ``wait()`` (see ``runtime.dist``).
    Collectives: ``all_reduce(t, op)`` (in place, returns t), ``all_gather(t) -> list``,
    ``broadcast(t, src)`` (in place), ``barrier()``.
    """

    backend = "base"

    def __init__(self, rank: int, world_size: int, clock=None, device="cpu"):
        self.rank = rank
        self.world_size = world_size
        self.clock = clock
        self.device = torch.device(device)
        self.stats = CommStats()

    # ----- point to point -------------------------------------------------------------
    def _check_peer(self, peer: int, what: str) -> None:
        if not checks.is_int(peer) or not 0 <= peer < self.world_size:
            raise ValueError(f"{what}={peer!r} is not a rank; valid ranks: 0..{self.world_size - 1}")
        if peer == self.rank:
            raise ValueError(f"rank {self.rank} cannot {what.replace('dst', 'send').replace('src', 'receive')} "
                             f"to/from itself ({what}={peer})")

    def _outgoing(self, tensor: torch.Tensor, dst: int) -> float:
        """Count an outgoing message and return its departure time on the clock (0 without one)."""
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"can only send torch.Tensor, got {type(tensor).__name__}")
        self._check_peer(dst, "dst")
        n = nbytes(tensor)
        self.stats.bytes_sent += n
        self.stats.msgs_sent += 1
        return self.clock.send(dst, n) if self.clock is not None else 0.0

    def _incoming(self, src: int, tensor: torch.Tensor, depart: float) -> torch.Tensor:
        n = nbytes(tensor)
        self.stats.bytes_recv += n
        self.stats.msgs_recv += 1
        if self.clock is not None:
            self.clock.recv(src, n, depart)
        return tensor

    def send(self, tensor: torch.Tensor, dst: int, tag: int = 0) -> None:
        """Blocking send (returns once the message is handed to the transport).

        On Gloo and NCCL this may wait until the receiver posts its receive; in a symmetric
        exchange (everyone sends, then everyone receives) use ``isend`` and wait afterwards."""
        self.isend(tensor, dst, tag).wait()

    def isend(self, tensor: torch.Tensor, dst: int, tag: int = 0) -> Work:
        """Non-blocking send of ``tensor`` to ``dst`` with ``tag``, charged on the clock; wait() on the Work."""
        depart = self._outgoing(tensor, dst)
        return self._transport_isend(tensor.detach(), dst, tag, depart)

    def recv(self, src: int, tag: int = 0, out: torch.Tensor | None = None) -> torch.Tensor:
        """Blocking receive of the next message from ``src`` with ``tag`` (into ``out`` if given)."""
        self._check_peer(src, "src")
        return self.irecv(src, tag, out).wait()

    def irecv(self, src: int, tag: int = 0, out: torch.Tensor | None = None) -> Work:
        """Non-blocking receive from ``src`` with ``tag`` (into ``out`` if given); wait() returns the tensor."""
        self._check_peer(src, "src")
        if out is not None and not isinstance(out, torch.Tensor):
            raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
        pending = self._transport_irecv(src, tag, out)

        def finish():
            _, tensor, depart = pending()
            return self._incoming(src, tensor, depart)

        return Work(finish)

    def recv_any(self, tag: int = 0) -> tuple[int, torch.Tensor]:
        """Blocking receive from whichever rank's message comes first; returns (src, tensor)."""
        src, tensor, depart = self._transport_recv_any(tag)
        return src, self._incoming(src, tensor, depart)

    def recv_first(self, sources, tag: int = 0) -> tuple[int, torch.Tensor]:
        """Receive the next message of whichever of ``sources`` comes first; returns (src, tensor).

        "First" is simulated time on the threads runtime: it waits until every source has a
        message pending and takes the one that arrives first on the clock (departure + link
        time; ties, and runs without a clock, go to the lowest rank), so an asynchronous
        server sees the same order on every run. Other transports take whichever message
        comes first in real time. Each source must be sure to send (a worker not waiting for
        a reply), or the wait ends in CommTimeout."""
        sources = sorted(set(sources))
        if not sources:
            raise ValueError("recv_first needs at least one source rank")
        for s in sources:
            self._check_peer(s, "src")
        src, tensor, depart = self._transport_recv_first(sources, tag)
        return src, self._incoming(src, tensor, depart)

    # ----- collectives ----------------------------------------------------------------
    def all_reduce(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        """Reduce ``tensor`` over all ranks in place (op: sum, avg, max, min, prod).

        Charged as a ring: each rank sends and receives 2(N-1) chunks of n/N bytes."""
        check_op(op)
        n, p = nbytes(tensor), self.world_size
        chunk = 2 * (p - 1) * n / p
        self._charge("all_reduce", n, chunk, chunk, 2 * (p - 1), 2 * (p - 1), tensor)
        self._transport_all_reduce(tensor, op)
        return tensor

    def unrecorded_all_reduce(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        """An all-reduce in place that is neither charged on the clock nor counted in the stats:
        for instrumentation that the algorithm itself would not send (the consensus distance of
        decentralized training), so that watching a run does not change its time or bytes."""
        check_op(op)
        self._agree(None, tensor, "all_reduce")
        self._transport_all_reduce(tensor, op)
        return tensor

    def all_gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        """Every rank's tensor (same shape on all ranks), as a list indexed by rank.

        Charged as a ring: each rank sends and receives N-1 blocks of n bytes."""
        n, p = nbytes(tensor), self.world_size
        self._charge("all_gather", n, (p - 1) * n, (p - 1) * n, p - 1, p - 1, tensor)
        return self._transport_all_gather(tensor)

    def broadcast(self, tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
        """Copy ``src``'s tensor into ``tensor`` on every rank (in place).

        Charged as a binomial tree: ceil(log2 N) rounds; a rank sends one copy per child."""
        if not checks.is_int(src) or not 0 <= src < self.world_size:
            raise ValueError(f"src={src!r} is not a rank; valid ranks: 0..{self.world_size - 1}")
        n = nbytes(tensor)
        kids = len(binomial_children((self.rank - src) % self.world_size, self.world_size))
        got = 0 if self.rank == src else 1
        self._charge("broadcast", n, kids * n, got * n, kids, got, tensor)
        self._transport_broadcast(tensor, src)
        return tensor

    def barrier(self) -> None:
        """Wait until every rank reaches the barrier (charged on the clock, no bytes counted)."""
        self._charge("barrier", 0, 0, 0, 0, 0)
        self._transport_barrier()

    def gather_shared(self, piece: torch.Tensor, replay, read=None) -> list | None:
        """Where ranks share memory (threads): every rank's ``piece``, read once, in one list all
        ranks share, with ``replay(comms, pieces)`` charging the messages; else None (send them)."""
        return None

    def _charge(self, name, n, sent, received, msgs_sent, msgs_recv, tensor=None) -> None:
        """Count a collective's traffic, make sure every rank brings a ``tensor`` of the same shape
        and dtype, and advance every clock to max(clocks) + its closed form: the check and the
        clocks in one agreement (:meth:`_agree`), one tiny all-reduce on Gloo, not two."""
        self.stats.bytes_sent += int(round(sent))
        self.stats.bytes_recv += int(round(received))
        self.stats.msgs_sent += msgs_sent
        self.stats.msgs_recv += msgs_recv
        start = self._agree(None if self.clock is None else self.clock.ready(), tensor, name)
        if self.clock is not None:
            self.clock.collective(start, name, n, self.world_size)

    # ----- compute and time -----------------------------------------------------------
    def compute(self, seconds: float | None = None, flops: float | None = None) -> None:
        """Advance the simulated clock by local compute: given seconds, or FLOPs at the
        network model's compute rate. Without a clock this is a no-op."""
        if self.clock is not None:
            self.clock.compute(seconds=seconds, flops=flops)

    @property
    def now(self) -> float:
        """Simulated seconds on this rank (0.0 when the run has no network model)."""
        return self.clock.now if self.clock is not None else 0.0

    # ----- transport hooks ------------------------------------------------------------
    def _agree(self, clock: float | None, tensor: torch.Tensor | None, what: str) -> float | None:
        """Before a collective: the latest of the ranks' ``clock`` values (None without a clock),
        and a ValueError naming the shapes unless every rank's ``tensor`` (when given) has the
        same shape and dtype."""
        raise NotImplementedError

    def _transport_isend(self, tensor, dst, tag, depart) -> Work:
        raise NotImplementedError

    def _transport_irecv(self, src, tag, out=None):
        """Return a callable that blocks and returns (src, tensor, depart); the tensor is ``out``
        when given (checked with :func:`check_into` before anything is written to it)."""
        raise NotImplementedError

    def _transport_recv_any(self, tag):
        raise NotImplementedError

    def _transport_recv_first(self, sources, tag):
        src, tensor, depart = self._transport_recv_any(tag)
        if src not in sources:
            raise RuntimeError(f"rank {self.rank} expected a message (tag {tag}) from one of ranks {sources}, "
                               f"got one from rank {src}")
        return src, tensor, depart

    def _transport_all_reduce(self, tensor, op):
        raise NotImplementedError

    def _transport_all_gather(self, tensor):
        raise NotImplementedError

    def _transport_broadcast(self, tensor, src):
        raise NotImplementedError

    def _transport_barrier(self):
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} rank {self.rank} of {self.world_size}>"
