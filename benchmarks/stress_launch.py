"""Gloo launches on a busy machine: how many fail?

Busy processes hold every core while several driver processes each launch groups of 3 and 4
Gloo ranks back to back, as pytest's workers do beside a book build. Half the launches run a
function that never communicates (each rank returns at once, as ``launch``'s own tests do),
half an all-reduce. Every failure is counted and its first line printed; a launch that had to
start its group again (``launch`` warns when it does) is counted apart.

    python benchmarks/stress_launch.py                        # 200 launches, 2 drivers
    python benchmarks/stress_launch.py --launches 400 --drivers 3 --busy 6
    python benchmarks/stress_launch.py --start-method forkserver

Nothing here forks once torch is imported: the drivers and the busy processes are new programs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

BUSY = "import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass\n"


def _idle(comm):
    return comm.rank


def _all_reduce(comm):
    import torch

    t = torch.full((1024,), float(comm.rank))
    comm.all_reduce(t)
    return t[0].item()


def drive(launches: int, worlds, start_method, deadline: float) -> None:
    """One driver: ``launches`` launches, one JSON line each on stdout."""
    from commlab.runtime import launch

    for i in range(launches):
        if time.time() > deadline:
            break
        world, fn = worlds[i % len(worlds)], (_idle, _all_reduce)[(i // len(worlds)) % 2]
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                launch(fn, world, runtime="gloo", timeout=60, start_method=start_method)
                error = None
            except Exception as e:  # noqa: BLE001 - counted, not raised
                error = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        retried = [str(w.message).splitlines()[0][:300] for w in caught if "starting its" in str(w.message)]
        print(json.dumps({"world": world, "fn": fn.__name__, "seconds": time.perf_counter() - start,
                          "error": error, "retried": retried}), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launches", type=int, default=200, help="launches in all, shared by the drivers")
    p.add_argument("--drivers", type=int, default=2, help="programs launching at the same time")
    p.add_argument("--busy", type=int, default=2 * (os.cpu_count() or 1), help="busy processes beside them")
    p.add_argument("--worlds", default="3,4", help="world sizes, in turn")
    p.add_argument("--start-method", default=None, choices=("fork", "forkserver", "spawn"))
    p.add_argument("--max-seconds", type=float, default=1800, help="stop launching after this long")
    p.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    worlds = [int(w) for w in args.worlds.split(",")]
    if args.driver:
        drive(args.launches, worlds, args.start_method, time.time() + args.max_seconds)
        return

    busy = [subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=args.max_seconds + 120)])
            for _ in range(args.busy)]
    share = [args.launches // args.drivers + (d < args.launches % args.drivers) for d in range(args.drivers)]
    cmd = [sys.executable, os.path.abspath(__file__), "--driver", "--worlds", args.worlds,
           "--max-seconds", str(args.max_seconds)] + (["--start-method", args.start_method] if args.start_method else [])
    start = time.time()
    try:
        drivers = [subprocess.Popen(cmd + ["--launches", str(n)], stdout=subprocess.PIPE, text=True) for n in share]
        rows, loads = [], []
        for d in drivers:
            for line in d.stdout:
                rows.append(json.loads(line))
                loads.append(os.getloadavg()[0])
            d.wait()
    finally:
        for b in busy:
            b.kill()
    failed = [r for r in rows if r["error"]]
    retried = [r for r in rows if r["retried"]]
    print(f"{len(rows)} launches of {args.worlds} Gloo ranks by {args.drivers} drivers beside {args.busy} busy "
          f"processes on {os.cpu_count()} cores in {time.time() - start:.0f} s "
          f"(load average {min(loads, default=0):.1f}-{max(loads, default=0):.1f})")
    seconds = [r["seconds"] for r in rows]
    if seconds:
        print(f"launch seconds: median {statistics.median(seconds):.2f}, max {max(seconds):.2f}")
    print(f"failed: {len(failed)}; started again and succeeded: {sum(not r['error'] for r in retried)}")
    for r in failed:
        print(f"  FAILED world={r['world']} {r['fn']}: {r['error']}")
    for r in retried:
        print(f"  started again world={r['world']} {r['fn']}: {r['retried'][0]}")


if __name__ == "__main__":
    main()
