"""Interactive panels for the book. Each first draws its default figure (what the static
website shows), then offers ipywidgets controls that redraw it."""
from __future__ import annotations

import matplotlib.pyplot as plt

from . import plots
from .net.link import PROFILES


def speedup_explorer(models: dict, global_batch: int = 256, link: str = "10GbE", flops: float = 1e13):
    """Speedup against workers; controls: model, global batch, network profile, TFLOP/s.

    models: {label: (params D, FLOPs per sample C)}.
    """
    import ipywidgets as w
    from IPython.display import display

    def draw(model_names, batch, profile, tflops):
        chosen = {k: models[k] for k in model_names} or models
        fig, ax = plt.subplots(figsize=(6, 4))
        plots.speedup_figure(chosen, batch, profile, tflops * 1e12, ax=ax)
        plt.show()

    draw(tuple(models), global_batch, link, flops / 1e12)  # the static figure
    controls = dict(
        model_names=w.SelectMultiple(options=list(models), value=tuple(models), description="models"),
        batch=w.IntSlider(value=global_batch, min=32, max=8192, step=32, description="global batch"),
        profile=w.Dropdown(options=list(PROFILES), value=link, description="network"),
        tflops=w.FloatLogSlider(value=flops / 1e12, base=10, min=-1, max=3, description="TFLOP/s"),
    )
    ui = w.interactive(draw, **controls)
    display(ui)
    return ui
