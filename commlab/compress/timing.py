"""Time to accuracy of compressed data-parallel training, with the compressor's own arithmetic
counted (chapter 07).

The Trainer's simulated clock charges a step's training FLOPs and its messages, not the time
a compressor computes. Here one BSP step with compressor C on N workers costs

    t_step = t_compute + t_compress + t_comm

* t_compute: the step's training FLOPs at a FLOP rate, as the clock charges them;
* t_compress: seconds measured on this machine for what one worker computes per step with
  the library's aggregation: compress its gradient, then decode what arrives, that is the N
  payloads of an all-gather ("gather" and "majority": ``combine`` decodes every worker's
  payload), one summed tensor ("sum": ``summable``, then ``from_summed``), PowerSGD's
  ``compress`` and ``decompress`` (its matrix products and QR), gTop-k's local selection
  and scatter (the merges of log2 N vectors of k entries are left out);
* t_comm: the closed forms of :mod:`commlab.net.cost` for the messages the library sends, as
  the compressor declares them (``wire``): a ring all-reduce of the 4d bytes (uncompressed) or
  of the summable tensor ("sum"), two all-reduces of the factors P and Q (PowerSGD), a ring
  all-gather of the payloads ("gather", "majority"; TernGrad's after an all-reduce of its
  scaler), a binomial-tree reduce and broadcast of one payload (gTop-k). A payload's bytes are
  those of x's own payload: the declared ``payload_bytes`` wherever the size does not depend on
  the data, and for a threshold or an entropy code what this x gives.

The gradient is one tensor: all layers fused into one buffer, as tensor fusion does. A
profile measured on one tensor stretches to a model of ``scale`` such tensors (time and
bytes linear in ``scale``: exact for sparsifiers and quantizers, and for the low-rank
compressors it means ``scale`` layers of the measured shape).

Time to accuracy = steps to the target accuracy (read from a run's History) x t_step.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from .. import checks, compress
from ..net import cost
from ..net.link import get_link
from .base import COLLECTIVES


@dataclass(frozen=True)
class StepProfile:
    """What one worker does per step with one compressor on a tensor of ``numel`` elements:
    the messages (collective, bytes) it takes part in, and ``seconds`` of compression
    arithmetic (measured; 0 without compression)."""

    name: str
    numel: int
    messages: tuple
    seconds: float

    def __post_init__(self):
        for kind, nbytes in self.messages:
            if kind not in COLLECTIVES or nbytes < 0:
                raise ValueError(f"message ({kind!r}, {nbytes!r}); valid collectives: {', '.join(COLLECTIVES)}")

    def comm_seconds(self, workers: int, link, scale: float = 1.0) -> float:
        """Closed-form seconds of the step's messages for a gradient ``scale`` times this one."""
        link = get_link(link)
        total = 0.0
        for kind, nbytes in self.messages:
            n = nbytes * scale
            if kind == "allreduce":
                total += cost.native("all_reduce", n, workers, link)  # a ring all-reduce
            elif kind == "allgather":
                total += cost.allgather_ring(n, workers, link)
            else:
                total += cost.reduce(n, workers, link) + cost.broadcast(n, workers, link)
        return total

    def step_seconds(self, workers: int, link, compute: float = 0.0, scale: float = 1.0) -> float:
        """t_compute + t_compress + t_comm for a gradient ``scale`` times this one."""
        return compute + self.seconds * scale + self.comm_seconds(workers, link, scale)

    @property
    def bytes_per_element(self) -> float:
        """Bytes of the step's messages (each counted once) per gradient element."""
        return sum(n for _, n in self.messages) / self.numel


def _best(fn, repeats: int, clock=time.perf_counter) -> float:
    fn()  # warm-up: the first touch of fresh memory and lazy initialisations are slow
    best = math.inf
    for _ in range(repeats):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def profile(spec, x: torch.Tensor, workers: int, repeats: int = 2, measure: bool = True,
            threads: int | None = 1) -> StepProfile:
    """The StepProfile of compressor ``spec`` (a registry spec, or None) on gradient ``x`` with
    ``workers`` workers. Timing takes the best of ``repeats`` calls after a warm-up, each on a
    fresh compressor (no state carried over, so LAQ is timed on a round it sends), with torch
    on ``threads`` CPU threads. With 1 (the default) the time is the CPU time of the calling
    thread, which other programs on a busy machine do not inflate, and it does not depend on
    the number of cores; otherwise wall-clock time (None keeps torch's setting).
    ``measure=False`` gives seconds = 0 (bytes only)."""
    if not checks.is_int(workers) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    d, size = x.numel(), x.element_size()
    c = compress.get(spec)
    if c is None:
        return StepProfile("uncompressed", d, (("allreduce", size * d),), 0.0)
    messages = tuple(c.wire(x.shape, x.dtype))
    if any(kind != "allreduce" for kind, _ in messages):  # a payload travels: x's own, whose size may
        nbytes = c.compress(x, key=0).nbytes  # depend on the data (a threshold, an entropy code)
        messages = tuple((kind, n if kind == "allreduce" else nbytes) for kind, n in messages)
    if any(kind == "allgather" for kind, _ in messages):  # every payload gathered and combined

        def work(c):
            p = c.compress(x, key=0)
            c.combine([p] * workers, key=0)
    elif c.aggregation == "sum" and c.protocol is None:  # one summed tensor

        def work(c):
            c.from_summed(c.summable(x, key=0), x, workers)
    else:  # a protocol's own rounds (PowerSGD's factors, gTop-k's tree): one encode, one decode

        def work(c):
            c.decompress(c.compress(x, key=0))
    seconds = 0.0
    if measure:
        before = torch.get_num_threads()
        torch.set_num_threads(threads or before)
        try:
            clock = time.thread_time if threads == 1 else time.perf_counter
            seconds = _best(lambda: work(compress.get(spec)), repeats, clock)
        finally:
            torch.set_num_threads(before)
    return StepProfile(str(spec), d, messages, seconds)


def steps_to_target(history, target: float):
    """The first step at which the measured test accuracy reaches ``target``; None if never."""
    for step, acc in zip(history.steps, history.test_accuracy):
        if not math.isnan(acc) and acc >= target:
            return step
    return None


def time_to_accuracy(steps, prof: StepProfile, workers: int, link, compute: float = 0.0,
                     scale: float = 1.0) -> float:
    """steps x t_step; inf when the target was never reached (``steps`` is None)."""
    if steps is None:
        return math.inf
    return steps * prof.step_seconds(workers, link, compute, scale)
