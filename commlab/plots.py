"""Figures the book draws from the library (each returns the matplotlib Axes)."""
from __future__ import annotations

import matplotlib.pyplot as plt

from . import perf
from .net import cost
from .net.link import get_link

WORKERS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def speedup_figure(models: dict, global_batch: int, link="10GbE", flops: float = 1e13, workers=WORKERS, ax=None):
    """Speedup S(N) against workers for several models.

    models: {label: (params D, training FLOPs per sample C)}.
    """
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    for label, (d, c) in models.items():
        ax.plot(workers, perf.speedup_curve(d, c, global_batch, workers, link, flops), marker="o", label=label)
    ax.plot(workers, workers, "k:", label="ideal")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("workers N")
    ax.set_ylabel("speedup S(N)")
    ax.set_title(f"global batch {global_batch}, {get_link(link).name}, {flops / 1e12:g} TFLOP/s per worker")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    return ax


def step_breakdown(d: int, c: float, global_batch: int, link="10GbE", flops: float = 1e13, workers=WORKERS, ax=None):
    """Stacked bars: compute t_s/N and communication t_m per step against workers."""
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    steps = [perf.step_time(d, c, global_batch, n, link, flops) for n in workers]
    x = range(len(workers))
    ax.bar(x, [s.compute * 1e3 for s in steps], label="compute t_s/N")
    ax.bar(x, [s.comm * 1e3 for s in steps], bottom=[s.compute * 1e3 for s in steps], label="all-reduce t_m")
    ax.set_xticks(list(x), [str(n) for n in workers])
    ax.set_xlabel("workers N")
    ax.set_ylabel("time per step (ms)")
    ax.legend()
    return ax


# ----- parameter servers and gossip (chapter 03) ---------------------------------------------
PS_WORKERS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)


def servers_for(spec, workers: int) -> int:
    """How many servers ``spec`` means for ``workers`` workers: an integer S, "N", or "N/k"
    (k a positive integer; at least one server)."""
    if isinstance(spec, int) and not isinstance(spec, bool) and spec >= 1:
        return spec
    if isinstance(spec, str):
        s = spec.replace(" ", "")
        if s == "N":
            return workers
        if s.startswith("N/") and s[2:].isdigit() and int(s[2:]) >= 1:
            return max(1, workers // int(s[2:]))
    raise ValueError(f"servers must be an integer >= 1, 'N' or 'N/k', got {spec!r}")


def ps_vs_allreduce(nbytes: float, link="10GbE", workers=PS_WORKERS, servers=(1, "N/4", "N"), ax=None):
    """Communication time of one BSP step against workers: ring all-reduce beside parameter
    servers on extra ranks (``cost.ps_sharded``), one line per entry of ``servers`` (an
    integer S, "N" or "N/k", see :func:`servers_for`)."""
    lk = get_link(link)
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    ax.plot(workers, [cost.allreduce_ring(nbytes, n, lk) * 1e3 for n in workers], "k-o", zorder=3,
            label="ring all-reduce")
    for spec in servers:
        t = [cost.ps_sharded(nbytes, n, servers_for(spec, n), lk) * 1e3 for n in workers]
        ax.plot(workers, t, "--s", markersize=4, label=f"PS, S = {spec}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(workers), [str(n) for n in workers])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.set_yscale("log")
    ax.set_xlabel("workers N")
    ax.set_ylabel("communication per step (ms)")
    ax.set_title(f"Ring all-reduce vs parameter server: {nbytes / 1e6:g} MB gradient, {lk.name}")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    return ax


def topology_layout(top):
    """Node positions: a grid for a torus (rows x cols), a circle otherwise; node 0 of a star
    in the middle."""
    import math

    n = top.name
    if n.startswith("torus("):
        cols = int(n[len("torus("):-1].split("x")[1])
        return [(i % cols, -(i // cols)) for i in range(top.n)]
    if n == "star":
        ring = [(math.cos(2 * math.pi * k / (top.n - 1)), math.sin(2 * math.pi * k / (top.n - 1)))
                for k in range(top.n - 1)]
        return [(0.0, 0.0)] + ring
    return [(math.cos(2 * math.pi * i / top.n), math.sin(2 * math.pi * i / top.n)) for i in range(top.n)]


def topology_figure(top, ax=None):
    """Draw a gossip topology (:class:`commlab.arch.topology.Topology`) from its neighbour
    lists: one segment per edge. A torus's wrap-around edges are drawn as two dashed stubs
    leaving the grid at its two ends."""
    ax = ax or plt.subplots(figsize=(3, 3))[1]
    pos, grid = topology_layout(top), top.name.startswith("torus(")
    for i, nb in enumerate(top.neighbors):
        for j in nb:
            if i < j:
                (x0, y0), (x1, y1) = pos[i], pos[j]
                if grid and (abs(x1 - x0) > 1 or abs(y1 - y0) > 1):  # a torus edge around the back:
                    for (xa, ya), (xb, yb) in (((x0, y0), (x1, y1)), ((x1, y1), (x0, y0))):  # two stubs out
                        dx = -0.4 * (xb > xa) + 0.4 * (xb < xa) if abs(xb - xa) > 1 else 0.0
                        dy = -0.4 * (yb > ya) + 0.4 * (yb < ya) if abs(yb - ya) > 1 else 0.0
                        ax.plot([xa, xa + dx], [ya, ya + dy], color="0.55", lw=0.8, ls="--", zorder=1)
                else:
                    ax.plot([x0, x1], [y0, y1], color="0.55", lw=0.8, zorder=1)
    ax.scatter([p[0] for p in pos], [p[1] for p in pos], s=40, color="tab:blue", zorder=2)
    edges = sum(top.degrees) // 2
    ax.set_title(f"{top.name}, n = {top.n}: {edges} edges, degree {top.max_degree}", fontsize=9)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax
