"""``python -m commlab simulate``: one data-parallel iteration of a built-in profile (or a profile
file, ``--profile``) on a cluster of :mod:`commlab.sim` (:func:`commlab.sim.iteration`), its
timeline summary, and the speedup table from 1 GPU up::

    python -m commlab simulate --model resnet50 --gpus 32 --net 100GbIB --method mg_wfbp
"""
from __future__ import annotations

from .. import sim
from ..sim.frameworks import framework
from .cluster import add_cluster_flags, add_profile_flags, cluster_from, profile_or_name, say
from .names import epilog

NAME = "simulate"


def add(sub, fmt) -> None:
    """The ``simulate`` subcommand."""
    s = sub.add_parser(NAME, help="simulate one iteration on a cluster", formatter_class=fmt,
                       epilog=epilog(("profile", "method", "cluster link")))
    add_cluster_flags(s, "a built-in profile (default resnet50)")
    s.add_argument("--method", default="mg_wfbp", choices=list(sim.METHODS))
    add_profile_flags(s)


def run(p, a) -> int:
    """Simulate the iteration and print it, then the speedups of every method on 1 GPU up to --gpus."""
    model = profile_or_name(p, a, list(sim.BUILTINS))
    cluster, g = cluster_from(p, a)
    it = sim.iteration(model, cluster, method=a.method)
    timeline = it.timeline
    comm = timeline[timeline.stream == "comm"]
    print(f"{a.profile or a.model} on {cluster}, {a.method}:")
    messages = f"{len(comm)} message{'' if len(comm) == 1 else 's'}"
    print(f"  {it.time * 1e3:.4g} ms per iteration; compute {it.single * 1e3:.4g} ms; {messages}, "
          f"{comm.bytes.sum() / 1e6:.4g} MB; communication ends {comm.end.max() * 1e3:.4g} ms after backward starts")
    print(f"  speedup {it.speedup:.3g} over one GPU ({it.speedup / a.gpus:.0%} of linear), "
          f"{it.throughput:.5g} samples/s")
    fw = framework(sim.METHODS[a.method][2])
    if fw.per_op:  # the survey's methods run as a framework runs them; advise and train charge the wire alone
        bare = sim.iteration(model, cluster, method=a.method, framework="ideal").time
        per = "collective" if fw.partition is None else f"{fw.partition / 1e6:.3g} MB part"
        say(f"  {a.method} runs as {fw.name} runs it, which adds {fw.per_op * 1e3:.3g} ms per {per} to the wire's "
            f"time; without it, as advise and train's simulated clock charge a step: {bare * 1e3:.4g} ms per "
            "iteration")
    sizes = sorted({2 ** k for k in range(a.gpus.bit_length()) if 2 ** k <= a.gpus} | {a.gpus})
    rows = []
    for n in sizes:
        if n > g and n % g:
            continue
        gn = min(g, n)
        c = sim.Cluster(n // gn, gn, intra=cluster.intra, inter=cluster.inter)
        rows.append((n, {m: sim.iteration(model, c, method=m).speedup for m in sim.METHODS}))
    width = max(len(m) for m in sim.METHODS)
    print("\nspeedup over one GPU\n" + "GPUs".rjust(5) + "".join(m.rjust(width + 1) for m in sim.METHODS))
    for n, sp in rows:
        print(str(n).rjust(5) + "".join(f"{sp[m]:.2f}".rjust(width + 1) for m in sim.METHODS))
    return 0
