"""Flow-level simulation speed: one ring all-reduce step on k-ary fat-trees of 128 and 1,024 GPUs.

    python benchmarks/bench_fabric.py
    python benchmarks/bench_fabric.py --k 8 16 --oversubscription 1 2

For each fabric: hosts, switches, directed links, the seconds to build it, the seconds to simulate
one step of a ring all-reduce (p simultaneous flows, max-min fair rates solved at every start and
end, :mod:`commlab.sim.flows`), and the simulated ring all-reduce of 100 MB against the closed form
2 (p-1) (alpha + n/(p C)), which a non-blocking fat-tree reaches (the issue's target: a 1,024-GPU
step in under 5 s). Then the synchronization algorithms of :mod:`commlab.sim.fabric_sync`, and whole
iterations on a fabric (:mod:`commlab.sim.on_fabric`): one model on a non-blocking and a 2:1
oversubscribed fat-tree of 128 GPUs against the Cluster's closed form with the same link.
"""
from __future__ import annotations

import argparse
import time

from commlab.arch import ring
from commlab.measure.bench import table
from commlab.net.link import get_link
from commlab import sim
from commlab.sim import fabric_sync
from commlab.sim.fabric import bcube, fat_tree
from commlab.sim.flows import ring_allreduce, simulate
from commlab.sim.gpu_fabric import gpu_cluster


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, nargs="*", default=[8, 16], help="fat-tree radix (k^3/4 hosts)")
    ap.add_argument("--oversubscription", type=float, nargs="*", default=[1.0, 2.0])
    ap.add_argument("--link", default="100GbIB")
    ap.add_argument("--mb", type=float, default=100.0)
    args = ap.parse_args()
    link, nbytes = get_link(args.link), args.mb * 1e6
    rows = []
    for k in args.k:
        for over in args.oversubscription:
            start = time.perf_counter()
            fab = fat_tree(k, link, oversubscription=over)
            built = time.perf_counter() - start
            p = len(fab.hosts)
            start = time.perf_counter()
            simulate(fab, [(i, (i + 1) % p, nbytes / p, 0.0) for i in range(p)])
            step = time.perf_counter() - start
            sim = ring_allreduce(fab, nbytes)
            closed = ring.cost(nbytes, p, link)
            rows.append([f"fat-tree k={k}, {over:g}:1", p, len(fab.switches), len(fab.capacity), f"{built:.2f}",
                         f"{step:.2f}", f"{1e3 * sim:.2f}", f"{1e3 * closed:.2f}", f"{sim / closed:.2f}"])
    table(f"One ring all-reduce step, flow level ({args.link}, {args.mb:g} MB)",
          ["fabric", "GPUs", "switches", "links", "build s", "step s", "ring ms", "closed form ms", "ratio"], rows)
    algorithms(nbytes)
    iterations(args.link)


def _timed(fn, *a):
    start = time.perf_counter()
    out = fn(*a)
    return out, time.perf_counter() - start


def algorithms(nbytes):
    """Synchronization algorithms on GPU clusters (8 GPUs per NVSwitch node) and BCube, flow by flow."""
    rows = []
    for nodes in (16, 128):
        for network in ("rails", "tor"):
            f = gpu_cluster(nodes, 8, "nvswitch", network)
            for name, fn in (("flat ring", fabric_sync.flat_ring), ("leader", fabric_sync.leader_allreduce),
                             ("rail-aware", fabric_sync.rail_allreduce)):
                args = (f, nbytes) if name == "flat ring" else (f, nbytes, 8)
                t, wall = _timed(fn, *args)
                rows.append([f"{nodes} x 8 GPUs, {network}", name, len(f.hosts), f"{1e3 * t:.2f}", f"{wall:.2f}"])
    for n, k, kft in ((4, 2, 8), (8, 1, 8)):
        hosts = n ** (k + 1)
        t, wall = _timed(fabric_sync.ps_sync, fat_tree(kft, "100GbIB"), nbytes, range(hosts))
        rows.append([f"fat-tree k={kft}, {hosts} hosts", "sharded PS", hosts, f"{1e3 * t:.2f}", f"{wall:.2f}"])
        t, wall = _timed(fabric_sync.bml_sync, bcube(n, k, "100GbIB"), nbytes, n, k)
        rows.append([f"BCube({n},{k})", "BML", hosts, f"{1e3 * t:.2f}", f"{wall:.2f}"])
    table(f"Synchronization algorithms on fabrics, flow level ({nbytes / 1e6:g} MB)",
          ["fabric", "algorithm", "GPUs", "simulated ms", "wall s"], rows)


def iterations(link, k=8):
    """One model's iteration on a k-ary fat-tree (non-blocking, 2:1) and on the equivalent Cluster."""
    rows = []
    for model in ("resnet50", "bert-large"):
        profile = sim.builtin(model)
        for spec in (None, "wfbp", "mg_wfbp"):
            for name, where in (("fat-tree 1:1", fat_tree(k, link)), ("fat-tree 2:1", fat_tree(k, link, 2)),
                                ("Cluster (closed form)", sim.Cluster.flat(k ** 3 // 4, link))):
                it, wall = _timed(sim.iteration, profile, where, None, spec)
                rows.append([model, it.plan.name, name, it.workers, f"{1e3 * it.time:.2f}", f"{1e3 * it.single:.2f}",
                             f"{it.throughput:.0f}", f"{wall:.2f}"])
    table(f"One iteration on a fabric, flow level, vs the closed form ({link}, {k ** 3 // 4} GPUs)",
          ["model", "schedule", "network", "GPUs", "iteration ms", "compute ms", "samples/s", "wall s"], rows)


if __name__ == "__main__":
    main()
