"""Interactive panels for the book. Each first draws its default figure (what the static
website shows), then offers ipywidgets controls that redraw it."""
from __future__ import annotations

import matplotlib.pyplot as plt

from . import plots
from .net.link import PROFILES, get_link


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
        profile=w.Dropdown(options=list(PROFILES), value=get_link(link).name, description="network"),
        tflops=w.FloatLogSlider(value=flops / 1e12, base=10, min=-1, max=3, description="TFLOP/s"),
    )
    ui = w.interactive(draw, **controls)
    display(ui)
    return ui


def ps_explorer(nbytes: float = 102.4e6, link: str = "10GbE", servers: int = 8, max_workers: int = 1024):
    """Parameter server against ring all-reduce: communication per step against workers.
    Controls: gradient size (MB), network profile, a fixed number of servers S (drawn beside
    one server and one server per worker), largest number of workers."""
    import ipywidgets as w
    from IPython.display import display

    def draw(megabytes, profile, shards, largest):
        workers = [2 ** k for k in range(1, largest.bit_length()) if 2 ** k <= largest]
        fig, ax = plt.subplots(figsize=(6, 4))
        plots.ps_vs_allreduce(megabytes * 1e6, profile, workers, servers=tuple(dict.fromkeys((1, shards, "N"))),
                              ax=ax)
        plt.show()

    draw(nbytes / 1e6, link, servers, max_workers)  # the static figure
    controls = dict(
        megabytes=w.FloatLogSlider(value=nbytes / 1e6, base=10, min=-1, max=4, description="gradient MB"),
        profile=w.Dropdown(options=list(PROFILES), value=get_link(link).name, description="network"),
        shards=w.IntSlider(value=servers, min=1, max=256, description="servers S"),
        largest=w.Dropdown(options=[2 ** k for k in range(3, 13)], value=max_workers, description="max workers"),
    )
    ui = w.interactive(draw, **controls)
    display(ui)
    return ui


def allreduce_explorer(nbytes: float = 100e6, p: int = 64, link: str = "10GbE", group_size: int = 8):
    """All-reduce algorithms side by side in the alpha-beta model: bars of the time of each at
    one message size, and time against message size. Controls: message size (MB), ranks N,
    network profile, ranks per node for the hierarchical all-reduce (NVLink inside a node)."""
    import ipywidgets as w
    from IPython.display import display

    def draw(megabytes, ranks, profile, per_node):
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
        plots.allreduce_bars(megabytes * 1e6, ranks, profile, per_node, ax=left)
        plots.allreduce_vs_size(ranks, profile, mark=megabytes * 1e6, ax=right)
        fig.tight_layout()
        plt.show()

    draw(nbytes / 1e6, p, link, group_size)  # the static figure
    controls = dict(
        megabytes=w.FloatLogSlider(value=nbytes / 1e6, base=10, min=-6, max=3, description="message MB",
                                   continuous_update=False),
        ranks=w.IntSlider(value=p, min=2, max=512, description="ranks N", continuous_update=False),
        profile=w.Dropdown(options=list(PROFILES), value=get_link(link).name, description="network"),
        per_node=w.IntSlider(value=group_size, min=1, max=16, description="ranks/node", continuous_update=False),
    )
    ui = w.interactive(draw, **controls)
    display(ui)
    return ui


def compression_explorer(x, family: str = "topk", value=0.01, name: str = "a gradient"):
    """One compressor on one gradient ``x`` (``name`` says which, in the title): relative
    error against payload bytes for every family's sweep, the chosen point marked, and x
    beside C(x) as matrices (:func:`commlab.plots_compress.tradeoff_figure`). Controls:
    family, and its parameter (ratio, tau, rank or levels) from the family's sweep."""
    import ipywidgets as w
    from IPython.display import display

    from . import plots_compress as pc

    def draw(fam, val):
        axes = pc.tradeoff_figure(x, fam, val, name=name)
        axes[0].figure.tight_layout()
        plt.show()

    draw(family, value)  # the static figure
    values = {f: list(sweep) for f, (_, sweep, _) in pc.TRADEOFF.items()}
    fam = w.Dropdown(options=list(pc.TRADEOFF), value=family, description="compressor")
    val = w.SelectionSlider(options=values[family], value=value if value in values[family] else values[family][0],
                            description=pc.TRADEOFF[family][0], continuous_update=False)

    def switch(change):  # a new family brings its own parameter and sweep
        val.options = values[change["new"]]
        val.description = pc.TRADEOFF[change["new"]][0]

    fam.observe(switch, names="value")
    ui = w.interactive(draw, fam=fam, val=val)
    display(ui)
    return ui


def quantizer_explorer(x, quantizer: str = "qsgd", levels: int = 4, draws: int = 20):
    """The errors C(x)_i - x_i of one quantizer on the vector ``x``, as a histogram over
    ``draws`` calls, with its bits per coordinate, relative error and bias in the title
    (:func:`commlab.plots_quant.error_histogram`). Controls: quantizer, levels s (QSGD and
    rotated quantization; the others have none), number of draws."""
    import ipywidgets as w
    from IPython.display import display

    from . import plots_quant as pq

    def draw(name, s, n):
        fig, ax = plt.subplots(figsize=(7, 3.8))
        pq.error_histogram(x, pq.quantizer_spec(name, s), draws=n, ax=ax)
        fig.tight_layout()
        plt.show()

    draw(quantizer, levels, draws)  # the static figure
    controls = dict(
        name=w.Dropdown(options=list(pq.QUANTIZERS), value=quantizer, description="quantizer"),
        s=w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128, 255], value=levels, description="levels s",
                            continuous_update=False),
        n=w.IntSlider(value=draws, min=2, max=100, description="draws", continuous_update=False),
    )
    ui = w.interactive(draw, **controls)
    display(ui)
    return ui
