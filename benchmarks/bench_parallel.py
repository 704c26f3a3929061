"""ZeRO-3 against BSP on Gloo ranks (wall seconds per step, bytes per rank), and the planner's speed.

    python benchmarks/bench_parallel.py                     # 4 Gloo ranks, the tiny transformer and the MLP
    python benchmarks/bench_parallel.py --ranks 2 --steps 20

Per model: the median wall seconds of a training step (from the History's wall clock, after the
first steps), the bytes a rank sends per step, and ZeRO-3's ratio to BSP (1.5 in bytes: two
all-gathers of the parameters and a reduce-scatter, against a ring all-reduce). Then the planner
(:mod:`commlab.parallel.planner`): seconds to sweep every layout of GPT-3 175B on 1,024 GPUs and
of the 1T GPT on 3,072, and plans per second.
"""
from __future__ import annotations

import argparse
import statistics
import time

from commlab.measure.bench import table
from commlab.parallel import planner
from commlab.train import Trainer

MODELS = {"mlp": dict(model="mlp", data="digits", batch_size=32),
          "transformer": dict(model="transformer", data="tokens", batch_size=16)}


def step_seconds(h, skip: int = 3) -> float:
    wall = h.wall_time
    return statistics.median(b - a for a, b in zip(wall[skip:], wall[skip + 1:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    rows = []
    for name, kw in MODELS.items():
        runs = {arch: Trainer(workers=args.ranks, arch=arch, runtime="gloo", progress=False, eval_every=10 ** 6,
                              **kw).fit(args.steps) for arch in ("ring", "zero(stage=3)")}
        bsp, z3 = runs["ring"], runs["zero(stage=3)"]
        sent = {a: sum(h.bytes_sent[-1]) / args.ranks for a, h in runs.items()}
        rows.append([name, f"{1e3 * step_seconds(bsp):.2f}", f"{1e3 * step_seconds(z3):.2f}",
                     f"{sent['ring']:,.0f}", f"{sent['zero(stage=3)']:,.0f}",
                     f"{sent['zero(stage=3)'] / sent['ring']:.2f}"])
    table(f"ZeRO-3 against BSP (ring), {args.ranks} Gloo ranks, median of {args.steps} steps",
          ["model", "BSP ms/step", "ZeRO-3 ms/step", "BSP bytes/rank", "ZeRO-3 bytes/rank", "bytes ratio"], rows)
    rows = []
    for model, gpus, batch in (("gpt3-175b", 1024, 1536), ("gpt-1t", 3072, 3072)):
        start = time.perf_counter()
        df = planner.candidates(model, gpus, batch=batch, zeros=(0, 1, 2, 3))
        seconds = time.perf_counter() - start
        best = df.iloc[0]
        rows.append([model, gpus, len(df), f"{seconds:.3f}", f"{len(df) / seconds:,.0f}",
                     f"t={best.tp} p={best.pp} d={best.dp} ZeRO-{best.zero}", f"{best.step_s:.2f}"])
    table("The planner's sweep of every layout", ["model", "GPUs", "layouts", "seconds", "plans/s", "best", "step s"],
          rows)


if __name__ == "__main__":
    main()
