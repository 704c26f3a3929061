"""Measurements the book and ``benchmarks/`` share: real wall-clock times on a runtime.

The rank functions live here, at module level, so Gloo and NCCL can run them in spawned
processes as well as forked ones.
"""
from __future__ import annotations

import statistics
import time

import torch

from .runtime import launch


def _time_allreduce(comm, numel: int, repeats: int, warmup: int):
    x = torch.ones(numel, dtype=torch.float32, device=comm.device)
    samples = []
    for i in range(warmup + repeats):
        comm.barrier()
        start = time.perf_counter()
        comm.all_reduce(x)
        if x.is_cuda:
            torch.cuda.synchronize()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples[warmup:])


def allreduce_seconds(world_size: int, numel: int, runtime: str = "gloo", repeats: int = 10, warmup: int = 3) -> float:
    """Median wall seconds of one native all-reduce of ``numel`` fp32 values (slowest rank)."""
    return max(launch(_time_allreduce, world_size, runtime=runtime, args=(numel, repeats, warmup)))


def _noop(comm):
    return comm.rank


def launch_seconds(world_size: int, runtime: str, repeats: int = 3) -> float:
    """Median wall seconds for ``launch`` to start ranks, run nothing, and return."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        launch(_noop, world_size, runtime=runtime)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
