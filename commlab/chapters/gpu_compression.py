"""Chapter 07's closing section, "Does compression pay on a GPU cluster?": the simulator's
prediction (:mod:`commlab.sim.compression`) of every compressor's throughput against bandwidth,
where each stops paying, and a widget to choose GPU, bandwidth, model and compressor.

The link at g Gb/s is TCP over Ethernet as :mod:`commlab.net.protocols` models it (framing, two
copies per byte, 25 us start-up), so the named tcp-1GbE ... tcp-100GbE are points of the sweep.
"""
from __future__ import annotations

import functools
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import sim
from ..net import protocols
from . import explorer

SPECS = ("fp16", "qsgd", "terngrad", "signsgd", "topk(0.01)+ef", "randk(0.01)", "dgc", "powersgd(rank=4)")
MODELS = {"resnet50": 64, "bert-base": 32}  # the batch per GPU
NAMED = (1, 10, 25, 100)  # the named TCP links, Gb/s


def tcp(gbits: float):
    """The TCP link of ``gbits`` Gb/s Ethernet (:func:`commlab.net.protocols.tcp`)."""
    return protocols.tcp(gbits).link()


@functools.lru_cache(maxsize=None)
def model_profile(model: str, device: str = "v100"):
    """The profile of ``model`` at its chapter batch (:data:`MODELS`) on ``device`` (cached)."""
    return sim.profile(model, batch=MODELS[model], device=device)


def step(model, spec, gbits, device="v100", nodes=8, framework="horovod"):
    """The simulated :class:`~commlab.sim.Iteration` of ``model`` with compressor ``spec`` (None:
    none) on ``nodes`` GPUs, one per node, over TCP at ``gbits`` Gb/s."""
    cluster = sim.Cluster(nodes, 1, inter=tcp(gbits))
    return sim.iteration(model_profile(model, device), cluster, compress=spec, framework=framework)


def speedup(model, spec, gbits, **kw) -> float:
    """Throughput with ``spec`` over throughput without compression (> 1: compression pays)."""
    return step(model, None, gbits, **kw).time / step(model, spec, gbits, **kw).time


def throughput_table(model="resnet50", specs=SPECS, gbits=NAMED, **kw) -> pd.DataFrame:
    """Samples per second of each compressor (rows, "none" first) on each link (columns)."""
    rows = {spec or "none": [step(model, spec, g, **kw).throughput for g in gbits] for spec in (None, *specs)}
    return pd.DataFrame.from_dict(rows, orient="index", columns=[f"{g:g} Gb/s" for g in gbits])


def breakeven(model, spec, lo=0.5, hi=400.0, **kw):
    """The bandwidth (Gb/s) above which ``spec`` stops paying: where its speedup crosses 1 going
    up in bandwidth (bisection on log g after a scan); ``-inf`` if it never pays in [lo, hi], ``inf``
    if it still pays at ``hi``."""
    grid = np.geomspace(lo, hi, 25)
    pays = [speedup(model, spec, g, **kw) > 1 for g in grid]
    if not any(pays):
        return -math.inf
    last = max(i for i, p in enumerate(pays) if p)
    if last == len(grid) - 1:
        return math.inf
    a, b = math.log(grid[last]), math.log(grid[last + 1])
    for _ in range(30):
        mid = (a + b) / 2
        a, b = (mid, b) if speedup(model, spec, math.exp(mid), **kw) > 1 else (a, mid)
    return math.exp((a + b) / 2)


def breakeven_table(models=tuple(MODELS), specs=SPECS, **kw) -> pd.DataFrame:
    """Per compressor and model, the bandwidth in Gb/s above which it stops paying."""
    return pd.DataFrame({m: [breakeven(m, s, **kw) for s in specs] for m in models}, index=list(specs))


def bandwidth_figure(models=tuple(MODELS), specs=SPECS, lo=1.0, hi=100.0, points=17, device="v100", axes=None):
    """Speedup over no compression against bandwidth (log x), one line per compressor, one panel
    per model stacked, the named TCP links marked."""
    if axes is None:
        _, axes = plt.subplots(len(models), 1, figsize=(6.8, 3.4 * len(models)), sharex=True)
    axes = np.atleast_1d(axes)
    grid = np.geomspace(lo, hi, points)
    for ax, model in zip(axes, models):
        for spec in specs:
            ax.plot(grid, [speedup(model, spec, g, device=device) for g in grid], label=spec, lw=1.6)
        ax.axhline(1.0, color="black", lw=1)
        for g in NAMED:
            ax.axvline(g, color="0.8", lw=0.8, zorder=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylabel("speedup over none")
        ax.set_title(f"{model}, batch {MODELS[model]}, 8 x {device.upper()}, Horovod", fontsize=10)
    axes[-1].set_xlabel("Ethernet bandwidth, Gb/s (TCP)")
    axes[0].legend(fontsize=8, ncol=2, loc="upper right")
    return axes


def breakdown(model, spec, gbits, device="v100"):
    """(compute, compression arithmetic, exposed communication) seconds of one iteration."""
    it = step(model, spec, gbits, device=device)
    arithmetic = 0.0 if it.compression is None else it.compression.arithmetic_s
    return it.single, arithmetic, it.time - it.single - arithmetic


def explorer_figure(model="resnet50", spec="topk(0.01)+ef", gbits=10.0, device="v100", ax=None):
    """Two bars, none and ``spec``: an iteration split into compute, the compressor's arithmetic
    and the communication that backward does not hide."""
    ax = ax or plt.subplots(figsize=(6.8, 2.6))[1]
    parts = [breakdown(model, s, gbits, device) for s in (None, spec)]
    left = np.zeros(2)
    for i, (label, color) in enumerate((("compute", "tab:blue"), ("encode + decode", "tab:orange"),
                                        ("exposed communication", "tab:red"))):
        widths = np.array([p[i] * 1e3 for p in parts])
        ax.barh([0, 1], widths, left=left, color=color, label=label)
        left += widths
    ax.set_yticks([0, 1], ["none", spec])
    ax.invert_yaxis()
    ax.set_xlabel("ms per iteration")
    ax.set_title(f"{model} on 8 x {device.upper()} at {gbits:.3g} Gb/s: speedup "
                 f"{speedup(model, spec, gbits, device=device):.2f}x", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    return ax


def gpu_explorer(model="resnet50", spec="topk(0.01)+ef", gbits=10.0, device="v100"):
    """Choose GPU, bandwidth (1-100 Gb/s), model and compressor: :func:`explorer_figure`."""
    import ipywidgets as w

    def draw(model, spec, gbits, device):
        ax = explorer_figure(model, spec, gbits, device)
        ax.figure.tight_layout()
        return ax

    return explorer.explore(draw, dict(model=w.Dropdown(options=list(MODELS), value=model, description="model"),
                       spec=w.Dropdown(options=list(SPECS), value=spec, description="compressor"),
                       gbits=w.FloatLogSlider(value=gbits, base=10, min=0, max=2, step=0.05, description="Gb/s",
                                              continuous_update=False),
                       device=w.Dropdown(options=["rtx2080ti", "v100"], value=device,
                                         description="GPU")))
