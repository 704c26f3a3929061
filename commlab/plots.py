"""Figures the book draws from the library (each returns the matplotlib Axes)."""
from __future__ import annotations

import functools

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


# ----- all-reduce algorithms (chapter 02) ------------------------------------------------------
ALLREDUCE_ALGORITHMS = ("naive", "ring", "tree", "double_tree", "halving_doubling")
ALLREDUCE_COLORS = {"naive": "tab:gray", "ring": "tab:blue", "tree": "tab:orange", "double_tree": "tab:red",
                    "halving_doubling": "tab:green", "hierarchical": "tab:purple"}
SEGMENT_CHOICES = (1, 2, 4, 8, 16, 32, 64)
MESSAGE_SIZES = tuple(10 ** (k / 4) for k in range(37))  # 1 B .. 1 GB, four sizes per decade
MAP_WORLDS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)


@functools.lru_cache(maxsize=None)
def allreduce_time(algorithm: str, nbytes: float, p: int, link="10GbE", segments=SEGMENT_CHOICES, **kw) -> float:
    """Model seconds of one all-reduce of ``nbytes`` over ``p`` ranks with the algorithm that
    ``commlab.arch`` runs under that name (``commlab.net.cost``). For "tree" and "double_tree"
    the fastest pipeline among ``segments`` (a tuple of choices, or one int), as libraries tune
    it by message size; other keywords go to ``cost.allreduce`` (group_size=, intra_link=)."""
    lk = get_link(link)
    if algorithm not in ("tree", "double_tree"):
        return cost.allreduce(nbytes, p, lk, algorithm, **kw)
    choices = (segments,) if isinstance(segments, int) else tuple(segments)
    if algorithm == "tree":
        return min(cost.allreduce_binary_tree(nbytes, p, lk, s) for s in choices)
    return min(cost.allreduce_double_tree(nbytes, p, lk, s) for s in choices)


def allreduce_winner(nbytes: float, p: int, link="10GbE", algorithms=ALLREDUCE_ALGORITHMS) -> str:
    """The fastest of ``algorithms`` by :func:`allreduce_time` (the first one listed on a tie)."""
    times = [allreduce_time(a, nbytes, p, link) for a in algorithms]
    return algorithms[times.index(min(times))]


def _size_axis(ax, sizes, axis="x"):
    ticks = [t for t in (1, 1e3, 1e6, 1e9) if min(sizes) <= t <= max(sizes)]
    names = {1: "1 B", 1e3: "1 kB", 1e6: "1 MB", 1e9: "1 GB"}
    getattr(ax, f"set_{axis}scale")("log")
    getattr(ax, f"set_{axis}ticks")(ticks, [names[t] for t in ticks])


def allreduce_vs_size(p: int, link="10GbE", sizes=MESSAGE_SIZES, algorithms=ALLREDUCE_ALGORITHMS, mark=None,
                      ax=None):
    """All-reduce time against message size (log-log), one line per algorithm, from the closed
    forms (:func:`allreduce_time`: trees with their best segment count). ``mark``: a message
    size to draw as a vertical line."""
    lk = get_link(link)
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    for a in algorithms:
        ax.plot(sizes, [allreduce_time(a, n, p, lk) for n in sizes], color=ALLREDUCE_COLORS.get(a), label=a)
    if mark is not None:
        ax.axvline(mark, color="k", ls=":", lw=1)
    _size_axis(ax, sizes)
    ax.set_yscale("log")
    ax.set_xlabel("message size n")
    ax.set_ylabel("all-reduce time (s)")
    ax.set_title(f"N = {p} ranks, {lk.name}: alpha-beta model")
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return ax


def allreduce_winner_map(link="10GbE", worlds=MAP_WORLDS, sizes=MESSAGE_SIZES, algorithms=ALLREDUCE_ALGORITHMS,
                         ax=None):
    """Which algorithm is fastest (:func:`allreduce_winner`) for each message size (x) and
    number of ranks (y, one row per entry of ``worlds``)."""
    import numpy as np
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    lk = get_link(link)
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    win = np.array([[algorithms.index(allreduce_winner(n, p, lk, algorithms)) for n in sizes] for p in worlds])
    logs = np.log10(sizes)
    mids = (logs[1:] + logs[:-1]) / 2
    x_edges = 10 ** np.concatenate([[2 * logs[0] - mids[0]], mids, [2 * logs[-1] - mids[-1]]])
    colors = [ALLREDUCE_COLORS.get(a, f"C{k}") for k, a in enumerate(algorithms)]
    ax.pcolormesh(x_edges, np.arange(len(worlds) + 1), win, cmap=ListedColormap(colors), vmin=-0.5,
                  vmax=len(algorithms) - 0.5)
    _size_axis(ax, sizes)
    ax.set_yticks(np.arange(len(worlds)) + 0.5, [str(p) for p in worlds])
    ax.set_xlabel("message size n")
    ax.set_ylabel("ranks N")
    ax.set_title(f"Fastest all-reduce, {lk.name} (alpha-beta model)")
    seen = sorted(set(win.ravel().tolist()))
    ax.legend([Patch(color=colors[k]) for k in seen], [algorithms[k] for k in seen], fontsize=8, loc="upper left")
    return ax


def allreduce_bars(nbytes: float, p: int, link="10GbE", group_size: int = 8, intra_link="NVLink",
                   algorithms=ALLREDUCE_ALGORITHMS + ("hierarchical",), ax=None):
    """Horizontal bars: model time of one all-reduce of ``nbytes`` over ``p`` ranks per algorithm
    (:func:`allreduce_time`). The flat algorithms see ``link`` everywhere; "hierarchical" sees
    nodes of ``group_size`` ranks joined by ``intra_link`` inside and ``link`` between them."""
    lk = get_link(link)
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    kw = {"hierarchical": dict(group_size=group_size, intra_link=intra_link)}
    times = [allreduce_time(a, nbytes, p, lk, **kw.get(a, {})) for a in algorithms]
    best = min(times)
    bars = ax.barh(range(len(algorithms)), [t * 1e3 for t in times],
                   color=[ALLREDUCE_COLORS.get(a, f"C{k}") for k, a in enumerate(algorithms)])
    for bar, t in zip(bars, times):
        ax.annotate(f" {_seconds_name(t)}" + (" (fastest)" if t == best else ""), (bar.get_width(), bar.get_y() + 0.4),
                    va="center", fontsize=8)
    names = [f"hierarchical ({group_size}/node)" if a == "hierarchical" else a for a in algorithms]
    ax.set_yticks(range(len(algorithms)), names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(right=max(times) * 1e3 * 30)
    ax.set_xlabel("all-reduce time (ms)")
    ax.set_title(f"{_bytes_name(nbytes)} on N = {p}, {lk.name}; hierarchical: {group_size} ranks per node "
                 f"on {get_link(intra_link).name}", fontsize=9)
    return ax


def _bytes_name(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.3g} B"


def _seconds_name(t: float) -> str:
    for unit, size in (("s", 1.0), ("ms", 1e-3)):
        if t >= size:
            return f"{t / size:.3g} {unit}"
    return f"{t * 1e6:.3g} us"


def ring_chunks_figure(masks, axes=None, titles=None):
    """A ring all-reduce step by step. ``masks[k][r][c]``: the ranks whose contributions rank r
    holds in chunk c after k steps, as a bitmask (bit s for rank s). One panel per step: rows
    are ranks, columns chunks, the colour counts the contributions, the label lists them; the
    cells that changed in step k are outlined."""
    import numpy as np
    from matplotlib.patches import Rectangle

    masks = np.asarray(masks, dtype=np.int64)
    steps, p = masks.shape[0], masks.shape[1]
    if axes is None:
        fig, axes = plt.subplots(1, steps, figsize=(1.9 * steps, 2.6), squeeze=False)
        axes = axes[0]
    counts = np.vectorize(lambda m: bin(int(m)).count("1"))(masks)
    for k, ax in enumerate(axes):
        im = ax.imshow(counts[k], cmap="Blues", vmin=0, vmax=p + 1)
        for r in range(p):
            for c in range(masks.shape[2]):
                label = "".join(str(s) for s in range(p) if masks[k, r, c] >> s & 1)
                ax.text(c, r, label, ha="center", va="center", fontsize=8,
                        color="white" if counts[k, r, c] > p / 2 else "black")
                if k and masks[k, r, c] != masks[k - 1, r, c]:
                    ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec="tab:red", lw=2))
        ax.set_xticks(range(masks.shape[2]))
        ax.set_yticks(range(p))
        ax.set_xlabel("chunk")
        ax.set_ylabel("rank" if k == 0 else "")
        ax.set_title(titles[k] if titles else f"step {k}", fontsize=9)
    return axes
