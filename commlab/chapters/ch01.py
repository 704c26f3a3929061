"""Chapter 01 (why communication limits data-parallel training): the speedup figures and
their widget (each figure returns the matplotlib Axes; the widget first draws its default
figure, what the static website shows, then offers ipywidgets controls that redraw it)."""
from __future__ import annotations

import matplotlib.pyplot as plt

from ..net import speedup
from ..net.link import PROFILES, get_link
from . import explorer

WORKERS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def speedup_figure(models: dict, global_batch: int, link="10GbE", flops: float = 1e13, workers=WORKERS, ax=None):
    """Speedup S(N) against workers for several models.

    models: {label: (params D, training FLOPs per sample C)}.
    """
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    for label, (d, c) in models.items():
        ax.plot(workers, speedup.speedup_curve(d, c, global_batch, workers, link, flops), marker="o", label=label)
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
    steps = [speedup.step_time(d, c, global_batch, n, link, flops) for n in workers]
    x = range(len(workers))
    ax.bar(x, [s.compute * 1e3 for s in steps], label="compute t_s/N")
    ax.bar(x, [s.comm * 1e3 for s in steps], bottom=[s.compute * 1e3 for s in steps], label="all-reduce t_m")
    ax.set_xticks(list(x), [str(n) for n in workers])
    ax.set_xlabel("workers N")
    ax.set_ylabel("time per step (ms)")
    ax.legend()
    return ax



def speedup_explorer(models: dict, global_batch: int = 256, link: str = "10GbE", flops: float = 1e13):
    """Speedup against workers; controls: model, global batch, network profile, TFLOP/s.

    models: {label: (params D, FLOPs per sample C)}.
    """
    import ipywidgets as w

    def draw(model_names, batch, profile, tflops):
        chosen = {k: models[k] for k in model_names} or models
        return speedup_figure(chosen, batch, profile, tflops * 1e12, ax=plt.subplots(figsize=(6, 4))[1])

    controls = dict(
        model_names=w.SelectMultiple(options=list(models), value=tuple(models), description="models"),
        batch=w.IntSlider(value=global_batch, min=32, max=8192, step=32, description="global batch"),
        profile=w.Dropdown(options=list(PROFILES), value=get_link(link).name, description="network"),
        tflops=w.FloatLogSlider(value=flops / 1e12, base=10, min=-1, max=3, description="TFLOP/s"),
    )
    return explorer.explore(draw, controls)
