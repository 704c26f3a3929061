"""Schedules: pure functions from a model's layers to the messages its gradients travel in.

A policy sees a :class:`~commlab.schedule.profile.Profile` (per layer, in forward order: forward
and backward seconds, gradient bytes) and ``comm_time(nbytes)``, the seconds one message of that
many bytes takes (for a ring all-reduce over N workers, a + b n with a = 2(N-1) alpha). It
returns a :class:`Plan`: the **pieces** gradients are cut into, and either fixed **buckets** of
pieces, sent first-come first-served, or a **priority** and a **credit** that a dispatcher uses
at run time (:mod:`commlab.schedule.dispatch`). Plans are data: the real executor
(:mod:`commlab.schedule.engine`) and the simulator (:mod:`commlab.sim`) replay the same plan.

Layers are numbered 0..L-1 in forward order; backward makes L-1 ready first. t_b(l), t_c(n) below
are the profile's backward seconds and ``comm_time``.

* ``wfbp``: wait-free backpropagation (Zhang et al., "Poseidon", USENIX ATC 2017): one message per
  layer, sent as soon as backward produces it, while the layers below are still computed. Each
  message pays the start-up a again.
* ``fusion(mb=25, first_mb=1)``: PyTorch DDP's buckets (Li et al., VLDB 2020): layers in reverse
  order fill a bucket until it holds at least ``mb`` MB (``first_mb`` for the first, so that
  communication starts early); a bucket goes when its last layer is ready. A layer's parameters
  stay together (DDP keeps a parameter whole; it may split a layer's weight and bias). Horovod's
  tensor fusion by size alone, with its 64 MB threshold, is ``fusion(mb=64, first_mb=64)``.
* ``cycle(ms=5, mb=64)``: Horovod's tensor fusion as its background loop runs it (Sergeev and Del
  Balso 2018; Horovod's docs, "Tensor Fusion"): every ``ms`` milliseconds, or when the previous
  cycle's messages are done if that is later, the gradients that are ready and not yet sent go,
  in messages of at most ``mb`` MB (at least one layer each). The defaults are Horovod's until
  v0.21 (December 2020); later versions use ``cycle(ms=1, mb=128)``. The plan fixes which layers
  travel together (from the ready times and ``comm_time``); the dispatcher times the messages, a
  message going when its last layer is ready, not at its cycle's tick.
* ``mg_wfbp``: merged-gradient WFBP (Shi, Chu, Li, INFOCOM 2019; TPDS 2021). Going down from layer
  L-1, merge layer l's message into layer l-1's when l's communication cannot start before l-1's
  gradient is ready, or waits for it less than the start-up a it saves::

      merge l into l-1   if   tau_c(l) > tau_b(l-1) + t_b(l-1) - a,   a = t_c(0)

  recomputing the start times tau_c after every merge (WFBP's recurrence, :func:`~commlab.schedule.dispatch.fifo`).
* ``bytescheduler(partition_mb=4, credit_mb=16)`` (Peng et al., SOSP 2019): every layer cut into
  partitions of at most ``partition_mb``; ready partitions wait in a queue ordered by layer (the
  input's first, as the next forward needs them); whenever the link is free the most urgent
  ready partitions go together, up to ``credit_mb`` in one message. The next forward starts layer
  l as soon as layer l's parameters are back.
* ``p3(slice_kb=256)`` (Jayarajan et al., MLSys 2019): parameter slices of ``slice_kb`` KB, one
  slice per message, most urgent layer first, and the next forward waits per layer (the slice
  size is ours; P3 chooses its own).

``schedule=None`` is the baseline: one message of every gradient after backward.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from .dispatch import fifo

MB = 1_000_000


@dataclass(frozen=True)
class Piece:
    """Bytes [start, stop) of layer ``layer``'s gradient (its parameters, concatenated)."""

    layer: int
    start: int
    stop: int

    @property
    def nbytes(self) -> int:
        """Bytes of this piece: stop - start."""
        return self.stop - self.start


@dataclass(frozen=True)
class Plan:
    """What a policy decided. pieces: every gradient byte exactly once; buckets: messages of
    piece indices in send order (sent first-come first-served), or None: pieces go by priority
    (the lowest layer first) in messages of at most ``credit`` bytes; forward_waits: the next
    forward may start layer l when layer l's parameters have arrived (otherwise it waits for all).
    A message always carries at least one piece (``credit=0``: exactly one)."""

    name: str
    pieces: tuple
    buckets: tuple | None = None
    credit: int | None = None
    forward_waits: bool = False

    def __post_init__(self):
        if (self.buckets is None) == (self.credit is None):
            raise ValueError("a Plan has either buckets (first-come first-served) or a credit (priority)")


class Schedule:
    """A scheduling policy: ``plan(profile, comm_time) -> Plan``."""

    name = "schedule"

    def plan(self, profile, comm_time) -> Plan:
        """The :class:`Plan` for this profile, given the seconds ``comm_time(nbytes)`` of one message."""
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{self.name}({args})"


def whole_layers(profile) -> tuple:
    """One piece per layer holding its whole gradient, in forward order."""
    return tuple(Piece(l, 0, b) for l, b in enumerate(profile.grad_bytes))


def buckets_of(groups) -> tuple:
    """Buckets (of piece indices) from groups of layers, for plans whose pieces are whole layers."""
    return tuple(tuple(g) for g in groups)


def baseline(profile) -> Plan:
    """No schedule: one message with every gradient, sent when backward is done."""
    return Plan("none", whole_layers(profile), (tuple(reversed(range(profile.layers))),))


class WFBP(Schedule):
    """``wfbp``: one message per layer, sent as soon as backward produces it (Zhang et al. 2017)."""
    name = "wfbp"

    def plan(self, profile, comm_time=None) -> Plan:
        """One bucket per layer, from the last layer down."""
        return Plan(self.name, whole_layers(profile), buckets_of([l] for l in reversed(range(profile.layers))))


def _positive(name: str, value, unit: str) -> float:
    if not checks.is_number(value) or not value > 0 or value != value:
        raise ValueError(f"{name}={value!r} must be a number of {unit} > 0")
    return float(value)


class Fusion(Schedule):
    """``fusion(mb=25, first_mb=1)``: DDP's buckets of whole layers of at least ``mb`` MB (Li et al. 2020)."""
    name = "fusion"

    def __init__(self, mb: float = 25, first_mb: float = 1):
        self.mb, self.first_mb = _positive("mb", mb, "MB"), _positive("first_mb", first_mb, "MB")

    def plan(self, profile, comm_time=None) -> Plan:
        """Fill buckets with layers from the last down until each holds ``mb`` MB (``first_mb`` the first)."""
        groups, current, size, cap = [], [], 0, self.first_mb * MB
        for l in reversed(range(profile.layers)):
            current.append(l)
            size += profile.grad_bytes[l]
            if size >= cap:
                groups.append(current)
                current, size, cap = [], 0, self.mb * MB
        if current:
            groups.append(current)
        return Plan(self.name, whole_layers(profile), buckets_of(groups))


class MGWFBP(Schedule):
    """``mg_wfbp``: WFBP with merges where a message would save its start-up a (Shi, Chu, Li 2019)."""
    name = "mg_wfbp"

    def plan(self, profile, comm_time) -> Plan:
        """Merge layer l's message into l-1's when tau_c(l) > tau_b(l-1) + t_b(l-1) - a; needs ``comm_time``."""
        if comm_time is None:
            raise ValueError("mg_wfbp needs comm_time(nbytes): its merges depend on the network")
        a = comm_time(0)
        ready = profile.ready()
        groups = [[l] for l in reversed(range(profile.layers))]  # messages in send order
        i = 0
        while i + 1 < len(groups):
            start = fifo([max(ready[l] for l in g) for g in groups],
                         [comm_time(sum(profile.grad_bytes[l] for l in g)) for g in groups])[i][0]
            below = groups[i + 1][0]  # the next layer down, l-1
            if start > ready[below] - a:
                groups[i + 1] = groups[i] + groups[i + 1]
                del groups[i]
            else:
                i += 1
        return Plan(self.name, whole_layers(profile), buckets_of(groups))


def partitions(profile, size: int) -> tuple:
    """Every layer cut into pieces of at most ``size`` bytes (on element boundaries)."""
    size = max(profile.itemsize, size // profile.itemsize * profile.itemsize)
    return tuple(Piece(l, s, min(s + size, b)) for l, b in enumerate(profile.grad_bytes) for s in range(0, b, size))


class ByteScheduler(Schedule):
    """``bytescheduler(partition_mb=4, credit_mb=16)``: partitions by priority under a credit
    (Peng et al. 2019)."""
    name = "bytescheduler"

    def __init__(self, partition_mb: float = 4, credit_mb: float = 16):
        self.partition_mb = _positive("partition_mb", partition_mb, "MB")
        self.credit_mb = _positive("credit_mb", credit_mb, "MB")
        if self.credit_mb < self.partition_mb:
            raise ValueError(f"credit_mb={credit_mb!r} is below one partition (partition_mb={partition_mb!r}): "
                             "no partition could ever be sent; use credit_mb >= partition_mb")

    def plan(self, profile, comm_time=None) -> Plan:
        """Partitions of ``partition_mb`` MB sent by priority, up to ``credit_mb`` MB a message;
        forward waits per layer."""
        return Plan(self.name, partitions(profile, int(self.partition_mb * MB)), credit=int(self.credit_mb * MB),
                    forward_waits=True)


class P3(Schedule):
    """``p3(slice_kb=256)``: one parameter slice per message, most urgent layer first (Jayarajan et al. 2019)."""
    name = "p3"

    def __init__(self, slice_kb: float = 256):
        self.slice_kb = _positive("slice_kb", slice_kb, "KB")

    def plan(self, profile, comm_time=None) -> Plan:
        """Slices of ``slice_kb`` KB, one per message (credit 0), by priority; forward waits per layer."""
        return Plan(self.name, partitions(profile, int(self.slice_kb * 1000)), credit=0, forward_waits=True)


class Cycle(Schedule):
    """``cycle(ms=5, mb=64)``: Horovod's background loop, every ``ms`` ms the ready gradients in
    messages of at most ``mb`` MB (module doc)."""
    name = "cycle"

    def __init__(self, ms: float = 5, mb: float = 64):
        self.ms, self.mb = _positive("ms", ms, "milliseconds"), _positive("mb", mb, "MB")

    def plan(self, profile, comm_time=None) -> Plan:
        """Walk the loop's cycles over the ready times; ``comm_time`` (if given) keeps the link busy."""
        ready, cycle, cap = profile.ready(), self.ms * 1e-3, self.mb * MB
        waiting = list(reversed(range(profile.layers)))  # the order backward makes them ready
        groups, tick, free = [], cycle, 0.0
        while waiting:
            tick = max(tick, free)
            if ready[waiting[0]] > tick:  # nothing ready: skip to the first cycle after the next one is
                tick += cycle * max(1, -(-(ready[waiting[0]] - tick) // cycle))
                continue
            start = tick
            while waiting and ready[waiting[0]] <= tick:
                group, size = [], 0
                while waiting and ready[waiting[0]] <= tick and (not group or size + profile.grad_bytes[waiting[0]] <= cap):
                    size += profile.grad_bytes[waiting[0]]
                    group.append(waiting.pop(0))
                groups.append(group)
                free = max(free, start) + (comm_time(size) if comm_time is not None else 0.0)
            tick = start + cycle
        return Plan(self.name, whole_layers(profile), buckets_of(groups))


POLICIES = (WFBP, Fusion, MGWFBP, ByteScheduler, P3, Cycle)
