"""Measurements the book and ``benchmarks/`` share: real wall-clock times on a runtime.

The rank functions live here, at module level, so Gloo and NCCL can run them in spawned
processes as well as forked ones.
"""
from __future__ import annotations

import statistics
import time

import torch

from ..runtime import launch


def table(title: str, header, rows, last_left: bool = False) -> None:
    """Print a table for a benchmark: a title, then right-aligned columns (the last one
    left-aligned with ``last_left``, for free text)."""
    print(f"\n{title}")
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in [header, ["-" * w for w in widths], *rows]:
        cells = [str(x).ljust(w) if last_left and i == len(row) - 1 else str(x).rjust(w)
                 for i, (x, w) in enumerate(zip(row, widths))]
        print("  ".join(cells).rstrip())


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


def launch_seconds(world_size: int, runtime: str, repeats: int = 3, start_method: str | None = None,
                   first: bool = False):
    """Median wall seconds for ``launch`` to start ranks, run nothing, and return; with
    ``first``, (the first launch's seconds, the median of the others): a fork server starts once."""
    samples = []
    for _ in range(repeats + first):
        start = time.perf_counter()
        launch(_noop, world_size, runtime=runtime, start_method=start_method)
        samples.append(time.perf_counter() - start)
    return (samples[0], statistics.median(samples[1:])) if first else statistics.median(samples)


def _time_compute(comm, model, dataset, batch, steps, model_kw):
    from ..models import build_model
    import torch.nn.functional as F

    torch.manual_seed(0)
    net = build_model(model, dataset, **model_kw).to(comm.device)
    x, y = dataset.x_train[:batch].to(comm.device), dataset.y_train[:batch].to(comm.device)
    comm.barrier()
    stamps = [time.perf_counter()]
    for _ in range(steps):
        net.zero_grad()
        F.cross_entropy(net(x), y).backward()
        if x.is_cuda:
            torch.cuda.synchronize()
        stamps.append(time.perf_counter())
    return statistics.median(b - a for a, b in zip(stamps[3:], stamps[4:]))


def compute_seconds(world_size: int, model, dataset, batch_per_rank: int, steps: int = 15,
                    runtime: str = "gloo", model_kw=None) -> float:
    """Median seconds of one forward + backward pass of ``batch_per_rank`` samples while
    ``world_size`` ranks compute at the same time and never communicate (slowest rank):
    the compute part of a step, including what the ranks cost each other on shared cores."""
    return max(launch(_time_compute, world_size, runtime=runtime,
                      args=(model, dataset, batch_per_rank, steps, model_kw or {})))


def _time_algorithms(comm, sizes, algorithms, repeats: int, warmup: int):
    """This rank's wall seconds per repeat for each (label, nbytes); the algorithms take
    turns within each repeat, so background load falls on all of them alike."""
    from ..arch import collectives

    out = {}
    for nbytes in sizes:
        x = torch.empty(max(1, nbytes // 4), dtype=torch.float32, device=comm.device)
        for i in range(warmup + repeats):
            for label, name, kw in algorithms:
                x.fill_(1.0)
                comm.barrier()
                start = time.perf_counter()
                collectives.allreduce(comm, x, name, **kw)
                if x.is_cuda:
                    torch.cuda.synchronize()
                if i >= warmup:
                    out.setdefault((label, nbytes), []).append(time.perf_counter() - start)
    return out


def allreduce_algorithm_seconds(world_size: int, sizes, algorithms, runtime: str = "gloo", repeats: int = 5,
                                warmup: int = 2) -> dict:
    """{(label, nbytes): median over repeats of the slowest rank's seconds} for all-reducing
    nbytes of fp32 with each of ``algorithms``, a list of (label, name, keyword arguments) for
    ``commlab.arch.collectives.allreduce`` ("native" is the runtime's own)."""
    per_rank = launch(_time_algorithms, world_size, runtime=runtime, args=(list(sizes), list(algorithms), repeats, warmup),
                      timeout=600)
    return {key: statistics.median(max(r[key][i] for r in per_rank) for i in range(repeats)) for key in per_rank[0]}


def _time_gossip(comm, numel: int, topology, repeats: int, warmup: int):
    """This rank's wall seconds per gossip step of ``numel`` fp32 values, and its bytes sent per step."""
    from ..decentral.gossip import gossip_step

    x = torch.ones(numel, dtype=torch.float32, device=comm.device)
    samples, sent = [], 0
    for i in range(warmup + repeats):
        comm.barrier()
        before, start = comm.stats.bytes_sent, time.perf_counter()
        gossip_step(comm, x, topology)
        if x.is_cuda:
            torch.cuda.synchronize()
        samples.append(time.perf_counter() - start)
        sent = comm.stats.bytes_sent - before
    return samples[warmup:], sent


def gossip_seconds(world_size: int, numel: int, topology, runtime: str = "gloo", repeats: int = 10,
                   warmup: int = 3) -> tuple[float, int]:
    """(median over repeats of the slowest rank's wall seconds for one gossip step of ``numel``
    fp32 values on ``topology``, the most bytes a rank sends in it)."""
    per_rank = launch(_time_gossip, world_size, runtime=runtime, args=(numel, topology, repeats, warmup), timeout=600)
    seconds = statistics.median(max(r[0][i] for r in per_rank) for i in range(repeats))
    return seconds, max(r[1] for r in per_rank)


def _calibrate(comm, repeats):
    from ..net import calibrate

    return calibrate(comm, repeats=repeats)


def calibrated_link(world_size: int = 2, runtime: str = "gloo", repeats: int = 10):
    """The LinkModel that ``commlab.calibrate`` fits by ping-pong on this runtime."""
    return launch(_calibrate, world_size, runtime=runtime, args=(repeats,))[0]
