"""The synchronization chapter's interactive panel. Like :mod:`commlab.widgets`, it first draws
its default figure (what the static website shows), then offers ipywidgets controls that
redraw it; every redraw trains four small models, a few seconds on a laptop."""
from __future__ import annotations

import matplotlib.pyplot as plt

from . import plots_sync


def sync_explorer(staleness: int = 2, slowdown: float = 4.0, workers: int = 8, steps: int = 60,
                  eta: float = 0.15, momentum: float = 0.9, flops: float = 1e9, link: str = "10GbE",
                  seed: int = 0):
    """BSP, SSP(s), ASP and one backup worker with a persistent straggler (the last rank,
    ``slowdown`` times slower), drawn by :func:`commlab.plots_sync.straggler_panel`: rank 0's
    test accuracy against its clock, who finishes when, and the staleness of the applied
    gradients. Controls: the staleness bound s and the straggler's slowdown."""
    import ipywidgets as w
    from IPython.display import display

    def draw(s, factor):
        plots_sync.straggler_panel(s, factor, workers=workers, steps=steps, eta=eta, momentum=momentum,
                                   flops=flops, link=link, seed=seed)
        plt.show()

    draw(staleness, slowdown)  # the static figure
    controls = dict(
        s=w.IntSlider(value=staleness, min=0, max=16, description="staleness s", continuous_update=False),
        factor=w.FloatSlider(value=slowdown, min=1.0, max=10.0, step=0.5, description="slowdown",
                             continuous_update=False),
    )
    ui = w.interactive(draw, **controls)
    display(ui)
    return ui
