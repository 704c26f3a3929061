"""The queue policies of :func:`commlab.infra.jobs.simulate_jobs`, in a registry by name.

A queue policy is a function ``decide(state)`` that the simulator calls after every event
(arrivals, completions and, for a ``periodic`` policy, every ``quantum`` seconds while jobs
wait). It reads a :class:`QueueState` and acts only through it: ``state.start(i, where)`` gives
waiting job ``i`` the placement ``where`` (found with ``state.place(i)``, the run's placement
policy on the free GPUs), ``state.preempt(i)`` sends running job ``i`` back to the queue. The
simulator owns time, speeds, completions and accounting; a policy only picks who runs.

:data:`QUEUE_POLICIES` maps a name to its :class:`QueuePolicy`; :func:`register_queue_policy`
adds one, from any module, with no change here::

    def lifo(state):
        for i in list(reversed(state.waiting)):   # newest first; start() edits waiting
            if (where := state.place(i)) is not None:
                state.start(i, where)

    register_queue_policy("lifo", lifo)
    simulate_jobs(jobs, dc, queue="lifo")

The built-ins, :data:`BUILTIN_QUEUES`, are ``"fifo"``, ``"sjf"`` and ``"las"`` (their rules and
sources in their docstrings below).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from .placement import Datacenter


@dataclass
class QueueState:
    """What a queue policy sees at time ``t`` of a run on ``dc``. ``jobs``: every job by id;
    ``waiting``: ids waiting, in the order they joined the queue (arrival, or preemption);
    ``held``: running id -> its placement {node: GPUs}; ``free``: node -> free GPUs; ``alone``:
    id -> seconds the job takes alone on its most compact placement (known in advance only to a
    clairvoyant policy); ``attained``: id -> GPU-seconds run so far. Treat them as read-only and
    act through :meth:`place`, :meth:`start` and :meth:`preempt`."""

    dc: Datacenter
    jobs: dict[int, Any]            # id -> commlab.infra.jobs.Job (jobs imports this module, not back)
    waiting: list[int]
    held: dict[int, dict[int, int]]
    free: dict[int, int]
    alone: dict[int, float]
    attained: dict[int, float]
    _place: Callable[[int], Optional[dict[int, int]]]
    _run: Callable[[int, dict[int, int]], None]
    _stop: Callable[[int], None]
    t: float = 0.0

    def place(self, i: int) -> Optional[dict[int, int]]:
        """Where job ``i`` would go on the free GPUs under the run's placement, or None."""
        return self._place(i)

    def start(self, i: int, where: dict[int, int]) -> None:
        """Take waiting job ``i`` off the queue and run it on ``where``."""
        self.waiting.remove(i)
        self._run(i, where)

    def preempt(self, i: int) -> None:
        """Stop running job ``i`` (it keeps its progress) and put it at the back of the queue."""
        self._stop(i)
        self.waiting.append(i)


@dataclass(frozen=True)
class QueuePolicy:
    """``decide(state)``: the rule, called after every event; ``periodic``: whether the simulator
    also wakes it every ``quantum`` seconds while a job waits (a preemptive, time-sliced policy)."""

    decide: Callable[[QueueState], None]
    periodic: bool = False


QUEUE_POLICIES: dict[str, QueuePolicy] = {}


def register_queue_policy(name: str, decide: Callable[[QueueState], None], *, periodic: bool = False) -> QueuePolicy:
    """Register ``decide`` as the queue policy ``name`` (see the module doc); returns its
    :class:`QueuePolicy`. A name already registered is refused: remove it from
    :data:`QUEUE_POLICIES` first to replace it."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name={name!r} must be a non-empty string")
    if name in QUEUE_POLICIES:
        raise ValueError(f"queue policy {name!r} is already registered; registered: {', '.join(QUEUE_POLICIES)}")
    if not callable(decide):
        raise ValueError(f"decide={decide!r} must be a function of a QueueState")
    if not isinstance(periodic, bool):
        raise ValueError(f"periodic={periodic!r} must be True or False")
    QUEUE_POLICIES[name] = policy = QueuePolicy(decide, periodic)
    return policy


def queue_policy(name: str) -> QueuePolicy:
    """The registered policy ``name``; an unknown name is refused with the valid ones."""
    if not isinstance(name, str) or name not in QUEUE_POLICIES:
        raise ValueError(f"queue={name!r}; valid: {', '.join(QUEUE_POLICIES)} "
                         "(add one with commlab.infra.queue_policies.register_queue_policy)")
    return QUEUE_POLICIES[name]


def fifo(state: QueueState) -> None:
    """First in, first out: strict arrival order. If the head of the queue does not fit, nobody
    behind it starts (head-of-line blocking), however small. Non-preemptive.

    Source: the textbook baseline; no paper in this module defines it. It is the order of the
    capacity scheduler that Tiresias (Gu et al., NSDI 2019) measures against, and Jeon et al.
    (USENIX ATC 2019) document the queueing delays of Philly's shared cluster."""
    while state.waiting and (where := state.place(state.waiting[0])) is not None:
        state.start(state.waiting[0], where)


def sjf(state: QueueState) -> None:
    """Shortest job first by estimated service, GPUs x the job's run time alone on its most
    compact placement (ties by arrival, then id); every waiting job that fits starts, shortest
    first; non-preemptive. It needs the job's length in advance, which a real cluster rarely
    knows.

    Source: the classic clairvoyant baseline; Tiresias (Gu et al., NSDI 2019) compares against
    its preemptive form (shortest remaining time first) to show how close a policy that needs no
    lengths comes. This one does not preempt."""
    jobs, alone = state.jobs, state.alone
    for i in sorted(state.waiting, key=lambda i: (alone[i] * jobs[i].gpus, jobs[i].arrival, i)):
        if (where := state.place(i)) is not None:
            state.start(i, where)


def las(state: QueueState) -> None:
    """Least attained service, after Tiresias (Gu et al., "Tiresias: A GPU Cluster Manager for
    Distributed Deep Learning", NSDI 2019), which needs no job length: a job's attained service
    is GPUs x seconds run so far. At every arrival, completion and every ``quantum`` seconds all
    jobs, running and waiting, are sorted by it (ties by arrival, then id) and given GPUs
    greedily in that order; running jobs left out are preempted and lose only their GPUs
    (checkpointing is taken to be free); jobs kept keep their placement; the newly chosen ones
    are placed afresh, so a job may resume elsewhere at another speed. Tiresias discretises the
    priorities into a few queues to avoid thrashing; this is the plain, continuous version."""
    jobs, attained, held = state.jobs, state.attained, state.held
    order = sorted([*held, *state.waiting], key=lambda i: (attained[i], jobs[i].arrival, i))
    chosen, room = [], state.dc.gpus
    for i in order:
        if jobs[i].gpus <= room:
            chosen.append(i)
            room -= jobs[i].gpus
    keep = set(chosen)
    for i in sorted(held):
        if i not in keep:
            state.preempt(i)
    for i in chosen:
        if i not in held:
            state.start(i, state.place(i))


register_queue_policy("fifo", fifo)
register_queue_policy("sjf", sjf)
register_queue_policy("las", las, periodic=True)

BUILTIN_QUEUES = tuple(QUEUE_POLICIES)  # ("fifo", "sjf", "las"), in the order chapter 11 tabulates them
