"""Foundation benchmarks: launch time per runtime, all-reduce bandwidth on threads vs
Gloo, and the Trainer's BSP step against a plain DistributedDataParallel loop.

    python benchmarks/bench_foundation.py            # full tables
    python benchmarks/bench_foundation.py --quick    # smaller sizes, fewer repeats

Target (issue 2): the Trainer's BSP step within 1.2x of DDP on 4 Gloo ranks.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from commlab import data, launch, models
from commlab.measure.bench import allreduce_seconds, launch_seconds, table
from commlab.runtime import fork_is_safe
from commlab.train import Trainer

MODEL = {"hidden": (512, 512)}
GLOBAL_BATCH = 512




def bench_launch(repeats):
    rows = [["threads", "-", n, "-", f"{launch_seconds(n, 'threads', repeats) * 1e3:.1f}"] for n in (2, 4)]
    methods = (["fork"] if fork_is_safe() else []) + ["forkserver", "spawn"]
    for method in methods:  # a GPU server never forks: forkserver is its default
        for n in (2, 4):
            first, rest = launch_seconds(n, "gloo", repeats, start_method=method, first=True)
            rows.append(["gloo", method, n, f"{first * 1e3:.1f}", f"{rest * 1e3:.1f}"])
    table("launch: start ranks, run nothing, return (the fork server starts at its first launch)",
          ["runtime", "start method", "ranks", "first ms", "median ms"], rows)


def bench_allreduce(sizes, repeats):
    rows = []
    for nbytes in sizes:
        row = [f"{nbytes / 1024:.0f} KB" if nbytes < 1 << 20 else f"{nbytes >> 20} MB"]
        for rt in ("threads", "gloo"):
            t = allreduce_seconds(4, nbytes // 4, rt, repeats=repeats)
            row += [f"{t * 1e3:.3f}", f"{nbytes / t / 1e9:.3f}"]
        rows.append(row)
    table("all_reduce, 4 ranks (algorithm bandwidth = bytes / time)",
          ["size", "threads ms", "threads GB/s", "gloo ms", "gloo GB/s"], rows)


def _ddp_rank(comm, steps, batch, seed):
    """A plain DDP loop on the process group that commlab's gloo launch created."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    ds = data.load("digits", seed=seed)
    torch.manual_seed(seed)
    model = DDP(models.mlp(ds.in_features, ds.num_classes, **MODEL))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    shard = data.split_iid(len(ds.y_train), comm.world_size, seed)[comm.rank]
    it = data.batches(ds.x_train, ds.y_train, shard, batch, seed=seed + comm.rank)
    stamps = []
    for _ in range(steps):
        x, y = next(it)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        stamps.append(time.perf_counter())
    return stamps


def step_ms(stamps, skip=10):
    return statistics.median(b - a for a, b in zip(stamps[skip:], stamps[skip + 1:])) * 1e3


def bench_trainer(steps, rounds):
    workers, batch = 4, GLOBAL_BATCH // 4
    trainer_ms, ddp_ms = [], []
    for _ in range(rounds):  # interleave to share any background load fairly
        h = Trainer(model="mlp", data="digits", workers=workers, runtime="gloo", batch_size=batch,
                    model_kw=MODEL, eval_every=10**9, progress=False).fit(steps=steps)
        trainer_ms.append(step_ms(h.wall_time))
        stamps = launch(_ddp_rank, workers, runtime="gloo", args=(steps, batch, 0))
        ddp_ms.append(max(step_ms(s) for s in stamps))
    t, d = statistics.median(trainer_ms), statistics.median(ddp_ms)
    table(f"BSP step, MLP {MODEL['hidden']} on digits, global batch {GLOBAL_BATCH}, {workers} Gloo ranks "
          f"(median of {rounds} runs of {steps} steps)",
          ["loop", "ms/step"], [["commlab Trainer (bsp, native)", f"{t:.2f}"], ["torch DDP", f"{d:.2f}"],
                                ["ratio Trainer/DDP", f"{t / d:.2f} (target <= 1.2)"]])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    sizes = [1 << k for k in (range(10, 27, 4) if a.quick else range(10, 27, 2))]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    bench_launch(2 if a.quick else 5)
    bench_allreduce(sizes, 3 if a.quick else 10)
    bench_trainer(30 if a.quick else 60, 1 if a.quick else 3)


if __name__ == "__main__":
    main()
