"""Chapter 03 (parameter servers and gossip): parameter server against ring all-reduce,
gossip topologies drawn from their neighbour lists, and the widget (each figure returns the
matplotlib Axes; the widget shows its default figure and controls that redraw it in place,
:mod:`commlab.chapters.explorer`)."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt

from .. import checks
from ..net import cost
from ..net.link import PROFILES, get_link
from ..arch.ps_layout import ps_sharded
from ..arch.ring import cost as ring_cost
from . import explorer

PS_WORKERS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)


def servers_for(spec, workers: int) -> int:
    """How many servers ``spec`` means for ``workers`` workers: an integer S, "N", or "N/k"
    (k a positive integer; at least one server)."""
    if checks.is_int(spec) and spec >= 1:
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
    servers on extra ranks (``commlab.arch.ps_layout.ps_sharded``), one line per entry of ``servers`` (an
    integer S, "N" or "N/k", see :func:`servers_for`)."""
    lk = get_link(link)
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    ax.plot(workers, [ring_cost(nbytes, n, lk) * 1e3 for n in workers], "k-o", zorder=3,
            label="ring all-reduce")
    for spec in servers:
        t = [ps_sharded(nbytes, n, servers_for(spec, n), lk) * 1e3 for n in workers]
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
    """Draw a gossip topology (:class:`commlab.decentral.topology.Topology`) from its neighbour
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


def ps_explorer(nbytes: float = 102.4e6, link: str = "10GbE", servers: int = 8, max_workers: int = 1024):
    """Parameter server against ring all-reduce: communication per step against workers.
    Controls: gradient size (MB), network profile, a fixed number of servers S (drawn beside
    one server and one server per worker), largest number of workers."""
    import ipywidgets as w

    def draw(megabytes, profile, shards, largest):
        workers = [2 ** k for k in range(1, largest.bit_length()) if 2 ** k <= largest]
        return ps_vs_allreduce(megabytes * 1e6, profile, workers, servers=tuple(dict.fromkeys((1, shards, "N"))),
                               ax=plt.subplots(figsize=(6, 4))[1])

    controls = dict(
        megabytes=w.FloatLogSlider(value=nbytes / 1e6, base=10, min=-1, max=4, description="gradient MB"),
        profile=w.Dropdown(options=list(PROFILES), value=get_link(link).name, description="network"),
        shards=w.IntSlider(value=servers, min=1, max=256, description="servers S"),
        largest=w.Dropdown(options=[2 ** k for k in range(3, 13)], value=max_workers, description="max workers"),
    )
    return explorer.explore(draw, controls)

