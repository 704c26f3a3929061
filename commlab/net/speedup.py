"""Why communication limits data-parallel training: the speedup model of chapter 01.

One step of synchronous data-parallel SGD on N workers computes a global batch of B
samples, B/N per worker, then all-reduces D gradient values (4D bytes in fp32):

    t_s      = B * C / F                   single-worker compute for the whole batch
    t_comp   = t_s / N                     each worker's share
    t_m      = ring all-reduce of 4D bytes = 2(N-1) alpha + 2(N-1)/N * 4D * beta
    S(N)     = t_s / (t_s / N + t_m)       speedup over one worker (no overlap)

with C the training FLOPs per sample, F a worker's FLOP rate. The communication-to-
computation ratio per worker is

    r(N) = f(N) D / (M C) = f(N) / (M I),   I = C / D (model intensity), M = B / N

where f(N) = 2(N-1)/N is the number of gradient-sized volumes a ring all-reduce sends
per worker. A model with high intensity I, or a large per-worker batch M, hides
communication better (Shi et al. 2021, quantitative survey).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import cost
from .link import get_link


def ring_factor(workers: int) -> float:
    """f(N) = 2(N-1)/N: gradient volumes a worker sends in a ring all-reduce."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    return 2 * (workers - 1) / workers


def c2c_ratio(intensity: float, batch_per_worker: int, workers: int) -> float:
    """Communication-to-computation ratio f(N) / (M I) (values sent per FLOP computed)."""
    if intensity <= 0 or batch_per_worker < 1:
        raise ValueError(f"need intensity > 0 and batch_per_worker >= 1, got {intensity!r}, {batch_per_worker!r}")
    return ring_factor(workers) / (batch_per_worker * intensity)


@dataclass(frozen=True)
class StepTime:
    """One step's times under the model above: compute t_s / N, comm t_m and single-worker t_s, in seconds."""
    workers: int
    compute: float   # t_s / N, seconds
    comm: float      # t_m, seconds
    single: float    # t_s, seconds

    @property
    def total(self) -> float:
        """t_s / N + t_m: one step's seconds (no overlap of compute and communication)."""
        return self.compute + self.comm

    @property
    def speedup(self) -> float:
        """S(N) = t_s / (t_s / N + t_m): speedup over one worker."""
        return self.single / self.total

    @property
    def efficiency(self) -> float:
        """S(N) / N: the share of linear speedup reached."""
        return self.speedup / self.workers


def step_time(params: int, flops_per_sample: float, global_batch: int, workers: int, link,
              flops: float = 1e12, bytes_per_value: int = 4) -> StepTime:
    """The model above for one step (strong scaling: the global batch is fixed)."""
    if global_batch < 1 or params < 1 or flops <= 0 or workers < 1 or not flops_per_sample > 0:
        raise ValueError(f"need global_batch >= 1, params >= 1, workers >= 1, flops_per_sample > 0, flops > 0; "
                         f"got {global_batch!r}, {params!r}, {workers!r}, {flops_per_sample!r}, {flops!r}")
    t_s = global_batch * flops_per_sample / flops
    t_m = cost.native("all_reduce", bytes_per_value * params, workers, get_link(link)) if workers > 1 else 0.0
    return StepTime(workers, t_s / workers, t_m, t_s)


def speedup(params: int, flops_per_sample: float, global_batch: int, workers: int, link,
            flops: float = 1e12) -> float:
    """S(N) = t_s / (t_s / N + t_m)."""
    return step_time(params, flops_per_sample, global_batch, workers, link, flops).speedup


def speedup_curve(params, flops_per_sample, global_batch, worker_counts, link, flops=1e12) -> list[float]:
    """S(N) for each N in ``worker_counts`` (strong scaling, the global batch fixed)."""
    return [speedup(params, flops_per_sample, global_batch, n, link, flops) for n in worker_counts]
