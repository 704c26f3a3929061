"""Chapter 02 (all-reduce algorithms): times from the closed forms, the winner map, the ring
step by step, and the widget (each figure returns the matplotlib Axes; the widget shows its default
figure and controls that redraw it in place, :mod:`commlab.chapters.explorer`)."""
from __future__ import annotations

import functools
import inspect

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch, Rectangle

from ..net import cost
from ..net.link import PROFILES, get_link
from .common import bytes_name, seconds_name
from ..arch import algorithms, collectives
from ..arch.collectives import cost as allreduce_cost
from ..arch.tree import cost as tree_cost, double_tree_cost
from . import explorer

ALLREDUCE_ALGORITHMS = tuple(algorithms.names("flat"))  # the registry's flat all-reduces, in its order
ALLREDUCE_COLORS = {"naive": "tab:gray", "ring": "tab:blue", "tree": "tab:orange", "double_tree": "tab:red",
                    "halving_doubling": "tab:green", "hierarchical": "tab:purple"}
SEGMENT_CHOICES = (1, 2, 4, 8, 16, 32, 64)
MESSAGE_SIZES = tuple(10 ** (k / 4) for k in range(37))  # 1 B .. 1 GB, four sizes per decade
MAP_WORLDS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)


def agree(comm, numel: int) -> dict:
    """A rank function for any runtime: every all-reduce algorithm of ``collectives.ALGORITHMS``
    on the same rank-dependent vector of ``numel`` values; {algorithm: the result as a list}.
    (Gloo's ranks import it from here: on a machine with a GPU they are not forked.)"""
    out = {}
    for name in collectives.ALGORITHMS:
        x = torch.arange(numel, dtype=torch.float32) * (comm.rank + 1)
        kw = {"group_size": 2} if _takes(collectives.ALGORITHMS[name], "group_size") else {}
        out[name] = collectives.allreduce(comm, x, name, **kw).tolist()
    return out


def _takes(fn, argument: str) -> bool:
    """Whether ``fn`` (an all-reduce's run or cost; None for native) takes ``argument``."""
    return fn is not None and argument in inspect.signature(fn).parameters


@functools.lru_cache(maxsize=None)
def allreduce_time(algorithm: str, nbytes: float, p: int, link="10GbE", segments=SEGMENT_CHOICES, **kw) -> float:
    """Model seconds of one all-reduce of ``nbytes`` over ``p`` ranks with the algorithm that
    ``commlab.arch`` runs under that name (``commlab.net.cost``). For "tree" and "double_tree"
    the fastest pipeline among ``segments`` (a tuple of choices, or one int), as libraries tune
    it by message size; other keywords go to ``cost.allreduce`` (group_size=, intra_link=)."""
    lk = get_link(link)
    if algorithm not in ("tree", "double_tree"):
        return allreduce_cost(nbytes, p, lk, algorithm, **kw)
    choices = (segments,) if isinstance(segments, int) else tuple(segments)
    if algorithm == "tree":
        return min(tree_cost(nbytes, p, lk, s) for s in choices)
    return min(double_tree_cost(nbytes, p, lk, s) for s in choices)


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
                   algorithms=None, ax=None):
    """Horizontal bars: model time of one all-reduce of ``nbytes`` over ``p`` ranks per algorithm
    (:func:`allreduce_time`; by default every registered one, :data:`collectives.COSTS`). The flat
    algorithms see ``link`` everywhere; one whose cost takes nodes ("hierarchical") sees nodes of
    ``group_size`` ranks joined by ``intra_link`` inside and ``link`` between them."""
    algorithms = tuple(collectives.COSTS) if algorithms is None else algorithms
    lk = get_link(link)
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    nodes = dict(group_size=group_size, intra_link=intra_link)
    times = [allreduce_time(a, nbytes, p, lk, **(nodes if _takes(collectives.COSTS[a], "group_size") else {}))
             for a in algorithms]
    best = min(times)
    bars = ax.barh(range(len(algorithms)), [t * 1e3 for t in times],
                   color=[ALLREDUCE_COLORS.get(a, f"C{k}") for k, a in enumerate(algorithms)])
    for bar, t in zip(bars, times):
        ax.annotate(f" {seconds_name(t)}" + (" (fastest)" if t == best else ""), (bar.get_width(), bar.get_y() + 0.4),
                    va="center", fontsize=8)
    names = [f"{a} ({group_size}/node)" if _takes(collectives.COSTS[a], "group_size") else a for a in algorithms]
    ax.set_yticks(range(len(algorithms)), names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(right=max(times) * 1e3 * 30)
    ax.set_xlabel("all-reduce time (ms)")
    ax.set_title(f"{bytes_name(nbytes)} on N = {p}, {lk.name}; hierarchical: {group_size} ranks per node "
                 f"on {get_link(intra_link).name}", fontsize=9)
    return ax



def ring_chunks_figure(masks, axes=None, titles=None):
    """A ring all-reduce step by step. ``masks[k][r][c]``: the ranks whose contributions rank r
    holds in chunk c after k steps, as a bitmask (bit s for rank s). One panel per step: rows
    are ranks, columns chunks, the colour counts the contributions, the label lists them; the
    cells that changed in step k are outlined."""
    masks = np.asarray(masks, dtype=np.int64)
    steps, p = masks.shape[0], masks.shape[1]
    if axes is None:
        cols = min(steps, 3)  # for the column: rows of at most three panels
        rows = -(-steps // cols)
        fig, grid = plt.subplots(rows, cols, figsize=(6.8, 2.5 * rows), squeeze=False)
        for ax in grid.flat[steps:]:
            ax.set_visible(False)
        axes = grid.flat[:steps]
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


def allreduce_explorer(nbytes: float = 100e6, p: int = 64, link: str = "10GbE", group_size: int = 8):
    """All-reduce algorithms side by side in the alpha-beta model: bars of the time of each at
    one message size, and time against message size. Controls: message size (MB), ranks N,
    network profile, ranks per node for the hierarchical all-reduce (NVLink inside a node)."""
    import ipywidgets as w

    def draw(megabytes, ranks, profile, per_node):
        fig, (left, right) = plt.subplots(2, 1, figsize=(6.8, 7.2))
        allreduce_bars(megabytes * 1e6, ranks, profile, per_node, ax=left)
        allreduce_vs_size(ranks, profile, mark=megabytes * 1e6, ax=right)
        fig.tight_layout()
        return fig

    controls = dict(
        megabytes=w.FloatLogSlider(value=nbytes / 1e6, base=10, min=-6, max=3, description="message MB",
                                   continuous_update=False),
        ranks=w.IntSlider(value=p, min=2, max=512, description="ranks N", continuous_update=False),
        profile=w.Dropdown(options=list(PROFILES), value=get_link(link).name, description="network"),
        per_node=w.IntSlider(value=group_size, min=1, max=16, description="ranks/node", continuous_update=False),
    )
    return explorer.explore(draw, controls)

