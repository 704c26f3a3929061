"""Simulator speed: one MG-WFBP iteration of ResNet-50 (batch 64, RTX 2080 Ti profile) on
the survey's nodes of 4 GPUs (PCIe3-survey inside, 100GbIB-survey between, the ring; the bytes
only, no framework cost, so that both levels time the same messages), 4 to 8,192 GPUs.

    python benchmarks/bench_sim.py                   # closed form to 8192, message level to 128
    python benchmarks/bench_sim.py --message-max 256 # message level further (slow: ~P^2 messages)

(a) Closed form (``level="closed"``): events are the messages timed by their closed form (MG-WFBP
    merges more as the start-up 2 (P-1) alpha grows, so fewer at scale); seconds include the
    policy's planning. Targets: < 1 s at 1,024 GPUs, < 5 s at 8,192.
(b) Message level (``level="message"``): every point-to-point message of every ring, through
    the event loop; events are the loop's (ready, leave, arrive; fewer when a port is free).
    Target: < 10 s at 128 GPUs.
(c) The quantitative survey's seven methods, speedup over one GPU, on its testbed
    (:func:`commlab.sim.survey.testbed`), closed form.
(d) The simulator against the survey's measured grid (:mod:`commlab.sim.survey`): every cell's
    error, then per network the median error, the groups whose predicted best method is within
    5% of the measured best, and the mean Spearman correlation of the methods' order.
"""
from __future__ import annotations

import argparse
import time

from commlab import sim
from commlab.measure.bench import table




def speed(profile, gpus, level):
    cluster = sim.Cluster(max(1, gpus // 4), min(4, gpus), intra="PCIe3-survey", inter="100GbIB-survey")
    began = time.perf_counter()
    it = sim.iteration(profile, cluster, method="mg_wfbp", level=level, framework="ideal")
    seconds = time.perf_counter() - began
    return [gpus, level, len(it.messages), it.p2p, it.events, f"{seconds:.3f}", f"{it.events / seconds:,.0f}",
            f"{it.speedup:.1f}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--closed-max", type=int, default=8192)
    parser.add_argument("--message-max", type=int, default=128)
    args = parser.parse_args()
    profile = sim.builtin("resnet50")
    header = ["GPUs", "mode", "collectives", "p2p messages", "events", "seconds", "events/s", "speedup"]
    sizes = [4 << k for k in range(12)]
    table("(a) closed form, ResNet-50 MG-WFBP", header,
          [speed(profile, g, "closed") for g in sizes if g <= args.closed_max])
    table("(b) message level, ResNet-50 MG-WFBP", header,
          [speed(profile, g, "message") for g in sizes if g <= args.message_max])
    for net in sim.survey.NETWORKS:
        for name in sim.BUILTINS:
            p = sim.builtin(name)
            rows = [[m] + [f"{sim.iteration(p, sim.survey.testbed(g, net), method=m).speedup:.2f}"
                           for g in (4, 8, 16, 32)] for m in sim.METHODS]
            table(f"(c) speedup over one GPU, {name} (batch {p.batch}), the survey's testbed on {net}",
                  ["method", "4", "8", "16", "32"], rows)
    cells = sim.survey.compare()
    rows = [[r.network, r.model, r.gpus, r.method, f"{r.measured:.2f}", f"{r.predicted:.2f}", f"{100 * r.error:+.1f}%",
             "calibration" if r.calibration else ""] for r in cells.itertuples()]
    table("(d) every cell of the survey's grid: measured and simulated speedup", ["network", "model", "GPUs", "method",
          "measured", "simulated", "error", ""], rows)
    s = sim.survey.summary(cells)
    table("(d) summary (calibration cells left out of the errors)", ["network", "cells", "median |error|",
          "best within 5%", "Spearman"], [[r.Index, r.cells, f"{100 * r.median_error:.1f}%", f"{r.best_within_5pct}/{r.groups}",
                                          f"{r.spearman:.2f}"] for r in s.itertuples()])


if __name__ == "__main__":
    main()
