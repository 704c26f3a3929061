"""One gossip step per topology on 4 Gloo ranks, beside one ring all-reduce of the same model.

    python benchmarks/bench_decentral.py                    # the MLP of the chapters, and 1M and 8M parameters
    python benchmarks/bench_decentral.py --ranks 8 --sizes 1000000

For each topology: its largest degree, its spectral gap (how fast gossip mixes), the median wall
seconds of one gossip step (slowest rank), the bytes a rank sends in it (degree x model), and the
closed form d_max (alpha + n beta) on a link calibrated by ping-pong on this machine; then the
ring all-reduce of the same bytes, measured and in closed form 2 (N-1) (alpha + n/N beta).
A gossip step sends the whole model to each neighbour, so at 4 ranks it moves as many bytes
as the ring all-reduce's 2 (N-1)/N n at degree 1.5 and more above; its case is latency (d
messages instead of 2 (N-1)) and no global synchronization, which grow with N.
"""
from __future__ import annotations

import argparse

from commlab import models
from commlab.arch import ring
from commlab.measure.bench import allreduce_algorithm_seconds, calibrated_link, gossip_seconds, table
from commlab.data import load
from commlab.decentral import gossip, topology
from commlab.models.intensity import count_params

TOPOLOGIES = ["ring", "torus", "hypercube", "exponential", "complete", "star"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--sizes", type=int, nargs="*", default=None, help="model sizes in parameters")
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    mlp = count_params(models.build_model("mlp", load("digits")))
    sizes = args.sizes or [mlp, 1 << 20, 8 << 20]
    link = calibrated_link(2, "gloo")
    n = args.ranks
    print(f"{n} Gloo ranks; calibrated link alpha={link.alpha * 1e6:.0f} us, 1/beta={1 / link.beta / 1e9:.2f} GB/s")
    for numel in sizes:
        nbytes = 4 * numel
        rows = []
        for name in TOPOLOGIES:
            try:
                top = topology.get(name, n)
            except ValueError as e:
                print(f"  skip {name}: {e}")
                continue
            seconds, sent = gossip_seconds(n, numel, top, repeats=args.repeats)
            rows.append([name, top.max_degree, f"{top.spectral_gap():.3f}", f"{seconds * 1e3:.2f}",
                         f"{gossip.cost(nbytes, top.max_degree, link) * 1e3:.2f}", f"{sent:,}"])
        measured = allreduce_algorithm_seconds(n, [nbytes], [("ring", "ring", {})], repeats=args.repeats)
        rows.append(["ring all-reduce", "-", "1 (exact)", f"{measured[('ring', nbytes)] * 1e3:.2f}",
                     f"{ring.cost(nbytes, n, link) * 1e3:.2f}", f"{int(2 * (n - 1) / n * nbytes):,}"])
        table(f"one step, {numel:,} fp32 parameters ({nbytes / 1e6:.2f} MB), {n} Gloo ranks",
              ["topology", "degree", "gap", "ms measured", "ms closed form", "bytes sent per rank"], rows)


if __name__ == "__main__":
    main()
