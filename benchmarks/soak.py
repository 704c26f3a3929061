"""An hour of short runs: does anything leak?

Round after round of short runs across the runtimes (threads, Gloo processes), the
synchronization modes, the compressors, a schedule and the simulator, in this one process. Every
minute it prints what this process holds: resident memory, open files, OS threads and child
processes (and how many runs so far, and how many failed). A leak shows as a column that keeps
growing after the first minutes, when caches and the allocator have settled.

    python benchmarks/soak.py                  # an hour
    python benchmarks/soak.py --minutes 5      # a short look

The end compares the last minute with the third (the first two warm caches up): resident memory
may move by at most 5% (the allocator holds on to freed pages in steps), the other columns not at
all.
"""
from __future__ import annotations

import argparse
import itertools
import os
import time
import warnings

import torch

from commlab import launch, sim
from commlab.measure.bench import table
from commlab.train import Trainer

SYNCS = ["bsp", "asp", "ssp(staleness=2)", "backup(backups=1)", "local_sgd(period=2)", "hogwild", "dpsgd",
         "choco(gamma=0.4)", "fedavg(fraction=0.5, epochs=1)"]
COMPRESSORS = [None, "fp16", "qsgd(levels=16)", "topk(0.01)+ef", "randk(0.05)", "signsgd", "terngrad",
               "dgc(0.01)", "powersgd(rank=2)", "natural", "threshold(0.01)"]
SIM_MODELS = ["resnet50", "bert-base", "bert-large"]


def _all_reduce(comm):
    t = torch.full((4096,), float(comm.rank))
    comm.all_reduce(t)
    comm.barrier()
    return t[0].item()


def runs():
    """The rounds of runs, without end: each item is (name, a function that runs it)."""
    for i in itertools.count():
        sync, comp = SYNCS[i % len(SYNCS)], COMPRESSORS[i % len(COMPRESSORS)]
        yield f"threads {sync}", lambda s=sync: Trainer(workers=4, sync=s, seed=i, progress=False).fit(steps=4)
        yield f"threads bsp {comp}", lambda c=comp: Trainer(workers=4, compress=c, seed=i, progress=False).fit(steps=4)
        yield "threads bsp wfbp", lambda: Trainer(workers=2, schedule="wfbp", seed=i, progress=False).fit(steps=3)
        yield f"gloo bsp {comp}", lambda c=comp: Trainer(workers=2, compress=c, runtime="gloo", seed=i,
                                                          progress=False).fit(steps=3)
        yield f"gloo launch {3 + i % 2}", lambda w=3 + i % 2: launch(_all_reduce, w, runtime="gloo")
        model = SIM_MODELS[i % len(SIM_MODELS)]
        yield f"sim {model} {comp}", lambda m=model, c=comp: sim.iteration(
            m, sim.Cluster(nodes=8, gpus_per_node=4, inter="10GbE"), compress=c)


def held() -> dict:
    """What this process holds now: resident MB, open files, OS threads, child processes."""
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    pid, children = os.getpid(), 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    children += int(f.read().rsplit(")", 1)[1].split()[1]) == pid
            except (OSError, IndexError, ValueError):
                pass  # it ended while we looked
    return {"rss_mb": int(status["VmRSS"].split()[0]) / 1024, "files": len(os.listdir("/proc/self/fd")),
            "threads": int(status["Threads"]), "children": children}


def soak(minutes: float) -> list[list]:
    rows, done, failed, errors = [], 0, 0, {}
    start = time.monotonic()
    next_mark = start + 60
    warnings.simplefilter("ignore")  # the runs' own warnings (small data, a compressor's advice)
    for name, run in runs():
        try:
            run()
        except Exception as e:  # noqa: BLE001 - counted and named at the end
            failed += 1
            errors.setdefault(name, f"{type(e).__name__}: {e}".splitlines()[0][:200])
        done += 1
        now = time.monotonic()
        if now >= next_mark:
            h = held()
            rows.append([len(rows) + 1, done, failed, f"{h['rss_mb']:.0f}", h["files"], h["threads"], h["children"]])
            print(f"minute {len(rows):3d}: {done} runs, {failed} failed, {h['rss_mb']:.0f} MB resident, "
                  f"{h['files']} files, {h['threads']} threads, {h['children']} children", flush=True)
            next_mark += 60
            if now - start >= minutes * 60:
                break
    for name, err in errors.items():
        print(f"  failed: {name}: {err}")
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=60)
    args = p.parse_args()
    torch.set_num_threads(1)
    rows = soak(args.minutes)
    table("held by the process, minute by minute", ["minute", "runs", "failed", "RSS MB", "files", "threads",
                                                     "children"], rows)
    if len(rows) >= 4:
        base, last = rows[2], rows[-1]
        growth = (float(last[3]) - float(base[3])) / float(base[3])
        flat = growth <= 0.05 and all(last[k] <= base[k] for k in (4, 5, 6)) and last[2] == 0
        print(f"\nfrom minute 3 to {last[0]}: resident {growth:+.1%}, files {last[4] - base[4]:+d}, threads "
              f"{last[5] - base[5]:+d}, children {last[6] - base[6]:+d}; {'flat' if flat else 'NOT FLAT'}")


if __name__ == "__main__":
    main()
