"""The threads runtime: N ranks as threads of one process.

Messages go through per-rank mailboxes (lists guarded by one lock; each rank waits on its own
condition variable, so a message wakes only its receiver);
collectives meet at a shared rendezvous where the last rank to arrive combines the
contributions in rank order, so results are deterministic. Functions defined in a
notebook cell work, start-up takes milliseconds, and torch releases the GIL inside its
kernels, so ranks do compute in parallel; ranks whose steps are mostly Python are better off
on one core (``launch(..., one_core=True)``, :func:`commlab.runtime.thread_ranks.caller_core`).
Starting the rank threads and ending them: :mod:`commlab.runtime.thread_ranks`.

Every wait polls an abort flag: when one rank fails, :func:`commlab.launch` sets it and
the other ranks leave their waits with :class:`Aborted` instead of hanging. A wait that
lasts longer than the run's timeout raises :class:`CommTimeout` naming the peer.
"""
from __future__ import annotations

import threading
import time

import torch

from .comm import Comm, Work, check_into
from .stats import nbytes
from .errors import Aborted, CommTimeout

POLL = 0.05  # seconds between checks of the abort flag


class World:
    """State shared by the ranks of one threaded run."""

    def __init__(self, world_size: int, timeout: float):
        self.world_size = world_size
        self.timeout = timeout
        self.abort = threading.Event()
        base = threading.RLock()
        self.lock = threading.Condition(base)  # collectives' rendezvous waits on this one
        self.inbox = [threading.Condition(base) for _ in range(world_size)]  # rank r waits on inbox[r]
        self.mailboxes = [[] for _ in range(world_size)]  # per destination: (src, tag, tensor, depart)
        self.generation = 0
        self.arrived: dict[int, object] = {}
        self.result = None

    def wake_all(self) -> None:
        """Wake every waiting rank (call with self.lock held), e.g. to see the abort flag."""
        self.lock.notify_all()
        for cond in self.inbox:
            cond.notify_all()

    def wait_for(self, predicate, rank: int, what, cond=None):
        """Wait on ``cond`` (default: the shared condition) until predicate() is true (call
        with self.lock held).

        ``what`` (a string, or a callable giving one when the wait times out) says what the
        rank was waiting for."""
        cond = self.lock if cond is None else cond
        deadline = time.monotonic() + self.timeout
        while not predicate():
            if self.abort.is_set():
                raise Aborted(f"rank {rank}: run aborted because another rank failed")
            left = deadline - time.monotonic()
            if left <= 0:
                raise CommTimeout(f"rank {rank} waited {self.timeout:g} s for {what() if callable(what) else what}")
            cond.wait(min(POLL, left))

    def exchange(self, rank: int, value, combine, what: str):
        """All ranks deposit a value; the last one computes combine(values by rank) once;
        every rank returns that result."""
        with self.lock:
            gen = self.generation
            self.arrived[rank] = value
            if len(self.arrived) == self.world_size:
                values = [self.arrived[r] for r in range(self.world_size)]
                self.result = combine(values)
                self.arrived = {}
                self.generation += 1
                self.lock.notify_all()
                return self.result
            missing = lambda: sorted(set(range(self.world_size)) - set(self.arrived))
            self.wait_for(lambda: self.generation != gen, rank,  # who is missing when it times out
                          lambda: f"{what} (ranks not there yet: {missing()})")
            return self.result


def _reduce(values: list[torch.Tensor], op: str) -> torch.Tensor:
    out = values[0].clone()
    for v in values[1:]:
        if op in ("sum", "avg"):
            out.add_(v)
        elif op == "prod":
            out.mul_(v)
        elif op == "max":
            torch.maximum(out, v, out=out)
        else:
            torch.minimum(out, v, out=out)
    if op == "avg":
        out.div_(len(values)) if out.is_floating_point() else out.floor_divide_(len(values))
    return out


def _same_shapes(values, what: str):
    shapes = {(tuple(v.shape), v.dtype) for v in values}
    if len(shapes) > 1:
        detail = ", ".join(f"rank {r}: {tuple(v.shape)} {v.dtype}" for r, v in enumerate(values))
        raise ValueError(f"{what} needs the same shape and dtype on every rank; got {detail}")


class ThreadComm(Comm):
    """Comm of one rank of the threads runtime: messages are private tensor copies through shared queues."""
    backend = "threads"

    def __init__(self, world: World, rank: int, clock=None):
        super().__init__(rank, world.world_size, clock)
        self.world = world

    # point to point: a message is (src, tag, tensor, depart); the tensor is a private,
    # contiguous copy (as a payload received over torch.distributed is)
    def _transport_isend(self, tensor, dst, tag, depart):
        w = self.world
        with w.lock:
            if w.abort.is_set():
                raise Aborted(f"rank {self.rank}: run aborted because another rank failed")
            w.mailboxes[dst].append((self.rank, tag, tensor.clone(memory_format=torch.contiguous_format), depart))
            w.inbox[dst].notify()
        return Work(lambda: None)

    def _take(self, match, what):
        w, box = self.world, self.world.mailboxes[self.rank]
        with w.lock:
            found = []

            def ready():
                for i, msg in enumerate(box):
                    if match(msg):
                        found.append(box.pop(i))
                        return True
                return False

            w.wait_for(ready, self.rank, what, w.inbox[self.rank])
            src, _, tensor, depart = found[0]
            return src, tensor, depart

    def _transport_irecv(self, src, tag, out=None):
        def finish():
            _, tensor, depart = self._take(lambda m: m[0] == src and m[1] == tag,
                                           f"a message from rank {src} (tag {tag})")
            if out is None:
                return src, tensor, depart
            check_into(out, tensor.dtype, tensor.numel(), self.rank, src, tag)
            return src, out.copy_(tensor.view(out.shape)), depart

        return finish

    def _transport_recv_any(self, tag):
        return self._take(lambda m: m[1] == tag, f"a message from any rank (tag {tag})")

    def _transport_recv_first(self, sources, tag):
        w, box = self.world, self.world.mailboxes[self.rank]
        net = self.clock.network if self.clock is not None else None
        with w.lock:
            first = {}  # source -> index of its oldest pending message with this tag

            def ready():
                first.clear()
                for i, (src, t, _, _) in enumerate(box):
                    if t == tag and src in sources and src not in first:
                        first[src] = i
                return len(first) == len(sources)

            def arrival(i):
                src, _, tensor, depart = box[i]
                link = net.message_time(src, self.rank, nbytes(tensor)) if net is not None else 0.0
                return depart + link, src

            w.wait_for(ready, self.rank, lambda: f"a message (tag {tag}) from each of ranks {sources} "
                       f"(none yet from {sorted(set(sources) - set(first))})", w.inbox[self.rank])
            src, _, tensor, depart = box.pop(min(first.values(), key=arrival))
            return src, tensor, depart

    # collectives
    def _agree(self, clock, tensor, what):
        # the shapes are compared where the contributions meet (_same_shapes in each transport)
        return None if clock is None else self.world.exchange(self.rank, clock, max, f"the clocks of {what}")

    def _transport_all_reduce(self, tensor, op):
        def combine(values):
            _same_shapes(values, "all_reduce")
            return _reduce(values, op)

        tensor.copy_(self.world.exchange(self.rank, tensor.detach(), combine, f"all_reduce({op})"))

    def _transport_all_gather(self, tensor):
        def combine(values):
            _same_shapes(values, "all_gather")
            return [v.clone() for v in values]

        return [t.clone() for t in self.world.exchange(self.rank, tensor.detach(), combine, "all_gather")]

    def _transport_broadcast(self, tensor, src):
        def combine(values):
            _same_shapes(values, "broadcast")
            return values[src].clone()

        tensor.copy_(self.world.exchange(self.rank, tensor.detach(), combine, f"broadcast from rank {src}"))

    def _transport_barrier(self):
        self.world.exchange(self.rank, None, lambda values: None, "barrier")

    # one rendezvous in place of an algorithm's messages
    def gather_shared(self, piece: torch.Tensor, replay, read=None) -> list | None:
        """Every rank's ``piece`` through one rendezvous: the last rank to arrive calls
        ``replay(comms, pieces)``, which charges every rank's counters and clock with the messages
        the gather would have sent, and applies ``read`` to each piece once; every rank gets the
        same list (shared: read it, never write it). A run whose clocks measure real compute
        returns None: there the time between a rank's messages is its own thread's, so the
        messages must really be sent one by one."""
        if self.world_size == 1 or (self.clock is not None and self.clock.network.measure_compute):
            return None

        def combine(values):
            comms, pieces = zip(*values)
            replay(comms, pieces)
            return [piece if read is None else read(piece) for piece in pieces]

        return self.world.exchange(self.rank, (self, piece.detach().reshape(-1)), combine, "a gather of pieces")
