"""All-reduce benchmarks: our algorithms against Gloo's own all-reduce, and the alpha-beta
model's prediction against the wall clock.

    python benchmarks/bench_allreduce.py            # full tables
    python benchmarks/bench_allreduce.py --quick    # fewer sizes and repeats

(a) Algorithm bandwidth (bytes / seconds, the slowest rank, median of repeats) of each
    algorithm and of native Gloo, 4 ranks, 1 KB to 64 MB. Target: our ring >= 0.6x native
    from 16 MB up.
(b) With alpha and beta calibrated by ping-pong (``commlab.calibrate``), predicted against
    measured time of the ring and the naive all-reduce, 2 and 4 ranks, 1 MB to 64 MB.
    Target: within 25%. Two predictions:
    * per link: the closed form of ``commlab.net.cost``, which gives every rank its own
      full-duplex link (a NIC on a switch);
    * one medium: all ranks on one host share its memory system, so their messages take
      turns and the time is the sum over all ranks' messages, M alpha + B beta, with M
      messages and B bytes in all (ring: M = 2p(p-1), B = 2(p-1)n; naive: M = 2(p-1),
      B = 2(p-1)n). Ping-pong measures one message at a time, so it calibrates this too.
"""
from __future__ import annotations

import argparse
import os

import torch

from commlab.measure.bench import allreduce_algorithm_seconds, calibrated_link, table
from commlab.net import cost

ALGORITHMS = [("native", "native", {}), ("ring", "ring", {}), ("ring(s=4)", "ring", {"segments": 4}),
              ("tree(s=4)", "tree", {}), ("double_tree", "double_tree", {}),
              ("halving_doubling", "halving_doubling", {}), ("hierarchical(2)", "hierarchical", {"group_size": 2}),
              ("naive", "naive", {})]




def size_name(nbytes: int) -> str:
    return f"{nbytes >> 10} KB" if nbytes < 1 << 20 else f"{nbytes >> 20} MB"


def bench_bandwidth(sizes, repeats, world=4):
    secs = allreduce_algorithm_seconds(world, sizes, ALGORITHMS, repeats=repeats)
    rows = []
    for n in sizes:
        rows.append([size_name(n)] + [f"{n / secs[(label, n)] / 1e6:.1f}" for label, _, _ in ALGORITHMS]
                    + [f"{secs[('native', n)] / secs[('ring', n)]:.2f}"])
    table(f"(a) all-reduce algorithm bandwidth, MB/s (bytes / time), {world} Gloo ranks; last column: ring speed "
          f"relative to native (target >= 0.6 from 16 MB)",
          ["size"] + [label for label, _, _ in ALGORITHMS] + ["ring/native"], rows)
    return secs


def one_medium(name, n, p, link):
    """All ranks' messages taking turns on one shared medium: M alpha + B beta."""
    messages = 2 * p * (p - 1) if name == "ring" else 2 * (p - 1)
    return messages * link.alpha + 2 * (p - 1) * n * link.beta


def bench_model(sizes, repeats, worlds=(2, 4)):
    link = calibrated_link(2, repeats=max(5, repeats))
    print(f"\ncalibrated on Gloo, 2 ranks: {link}")
    rows = []
    for p in worlds:
        secs = allreduce_algorithm_seconds(p, sizes, [("ring", "ring", {}), ("naive", "naive", {})], repeats=repeats)
        for name in ("ring", "naive"):
            for n in sizes:
                link_ms, bus_ms, meas = cost.allreduce(n, p, link, name), one_medium(name, n, p, link), secs[(name, n)]
                rows.append([name, p, size_name(n), f"{link_ms * 1e3:.2f}", f"{meas / link_ms - 1:+.0%}",
                             f"{bus_ms * 1e3:.2f}", f"{meas / bus_ms - 1:+.0%}", f"{meas * 1e3:.2f}"])
    table("(b) calibrated alpha-beta model vs measured wall time (target: within 25%)",
          ["algorithm", "ranks", "size", "per link ms", "error", "one medium ms", "error", "measured ms"], rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    a = ap.parse_args()
    print(f"torch {torch.__version__}, {os.cpu_count()} CPU cores")
    big = [1 << k for k in range(20, 27, 2)]  # 1, 4, 16, 64 MB
    if a.quick:
        bench_bandwidth([1 << 10, 1 << 16, 1 << 20, 1 << 24], repeats=3)
        bench_model([1 << 20, 1 << 24], repeats=3)
    else:
        bench_bandwidth([1 << k for k in range(10, 27, 2)], repeats=7)
        bench_model(big, repeats=7)


if __name__ == "__main__":
    main()
