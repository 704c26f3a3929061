"""Figures of the synchronization chapter (04), the measurements behind them, and its widget.

* :func:`staleness_values`: the staleness of every applied gradient of a History.
* :func:`lr_for` and :func:`run_syncs`: the chapter's learning-rate convention and its runs;
  :func:`time_to_loss`: when a run's (smoothed) training loss first falls below a target.
* :func:`loss_figure`, :func:`staleness_histogram`, :func:`progress_figure`,
  :func:`accuracy_time_figure`: the chapter's panels; :func:`describe` writes the setup line
  every figure carries; :func:`straggler_panel` is the widget's figure
  (:func:`sync_explorer`).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..net import Network
from ..train import Trainer
from . import explorer

# a fixed colour per synchronization rule, the same in every figure of the chapter
COLORS = {"bsp": "C0", "ssp": "C2", "asp": "C3", "backup": "C1", "round_robin": "C4", "hogwild": "C5"}


def color_of(spec: str) -> str:
    """The chapter's colour for a sync spec such as "ssp(staleness=2)"."""
    return COLORS.get(spec.split("(")[0], "C7")


def styles(specs) -> dict:
    """{spec: (colour, line style)}: the family's colour, and solid, dashed, dotted, ... for its
    first, second, third, ... member among ``specs``."""
    seen, out = {}, {}
    for spec in specs:
        family = spec.split("(")[0]
        k = seen.get(family, 0)
        seen[family] = k + 1
        out[spec] = (color_of(spec), ["-", "--", ":", "-."][k % 4])
    return out


# synchronizers that apply every gradient on its own, as it arrives
PER_GRADIENT = ("asp", "ssp", "round_robin", "hogwild")


def lr_for(spec: str, eta: float, workers: int) -> float:
    """The chapter's learning-rate convention: BSP and backup workers apply one averaged
    gradient per step with ``eta``; the rules that apply each of the N gradients on its own
    use eta / N, so that N of their updates move the model as far as one BSP step."""
    return eta / workers if spec.split("(")[0] in PER_GRADIENT else eta


def run_syncs(specs, *, workers: int, steps: int, net, eta: float, momentum: float = 0.0, seed: int = 0,
              eval_every: int = 10, **kw) -> dict:
    """{spec: (trainer, history)}: the MLP on digits over one parameter server (Hogwild on
    shared memory), one run per sync spec, learning rate by :func:`lr_for`."""
    out = {}
    for spec in specs:
        arch = "native" if spec == "hogwild" else "ps"
        run = Trainer(model="mlp", data="digits", workers=workers, sync=spec, arch=arch,
                      net=None if spec == "hogwild" else net, seed=seed, lr=lr_for(spec, eta, workers),
                      momentum=momentum, eval_every=eval_every, progress=False, **kw)
        out[spec] = (run, run.fit(steps=steps))
    return out


def staleness_values(history, workers=None) -> np.ndarray:
    """The staleness of every applied gradient of a History (dropped ones left out), of all
    workers or of those in ``workers``."""
    keep = None if workers is None else set(workers)
    return np.array([s for row in history.staleness for w, s in enumerate(row)
                     if s is not None and (keep is None or w in keep)], dtype=int)


def describe(run, steps: int, lr: str | None = None) -> str:
    """The setup line of a figure: workers, model, data, link, FLOP rate, stragglers, steps, batch, lr."""
    c, net = run.config, run.network
    slow = net.slowdown
    if isinstance(slow, dict):
        slow = ", ".join(f"rank {r} x{f:g}" for r, f in sorted(slow.items())) or "no stragglers"
    parts = [f"{c.workers} workers", f"{c.model} on {c.data}", f"{net.link.name}", f"{net.flops / 1e9:g} GFLOP/s",
             f"{slow}", f"{steps} steps", f"batch {c.batch_size}", lr or f"lr {c.lr:g}"]
    if c.momentum:
        parts.append(f"momentum {c.momentum:g}")
    return ", ".join(parts)


def _smooth(y, window: int):
    y = np.asarray(y, dtype=float)
    if window <= 1:
        return y
    kernel = np.ones(window) / window
    pad = np.pad(y, (window // 2, window - 1 - window // 2), mode="edge")
    return np.convolve(pad, kernel, mode="valid")


def time_to_loss(history, target: float, smooth: int = 5) -> float:
    """Simulated seconds (the last worker's clock) at the first step whose training loss, as a
    running mean over ``smooth`` steps, is below ``target``; NaN if it never gets there."""
    below = np.nonzero(_smooth(history.loss, smooth) < target)[0]
    return float(history.sim_time[below[0]]) if below.size else float("nan")


def loss_figure(histories: dict, x: str = "step", ax=None, smooth: int = 1, title: str | None = None):
    """Training loss (mean over workers, running mean over ``smooth`` steps) of each run,
    against "step" or "sim_time" (when the last worker finished the step)."""
    if x not in ("step", "sim_time"):
        raise ValueError(f"x must be 'step' or 'sim_time', got {x!r}")
    ax = ax or plt.gca()
    for spec, h in histories.items():
        xs = h.steps if x == "step" else np.array(h.sim_time) * 1e3
        color, ls = styles(histories)[spec]
        ax.plot(xs, _smooth(h.loss, smooth), ls, color=color, label=spec, lw=1.5)
    ax.set_xlabel("step" if x == "step" else "simulated time (ms)")
    ax.set_ylabel("training loss" + (f" (running mean of {smooth})" if smooth > 1 else ""))
    ax.set_yscale("log")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return ax


def staleness_histogram(histories: dict, ax=None, title: str | None = None, workers=None):
    """How stale the applied gradients were: a histogram per run (of ``workers`` only, if given)."""
    ax = ax or plt.gca()
    values = {spec: staleness_values(h, workers) for spec, h in histories.items()}
    top = max((int(v.max()) for v in values.values() if v.size), default=0)
    bins = np.arange(top + 2) - 0.5
    for spec, v in values.items():
        if v.size:
            color, ls = styles(values)[spec]
            ax.hist(v, bins=bins, histtype="step", lw=1.8, color=color, ls=ls,
                    label=f"{spec}: mean {v.mean():.1f}, max {v.max()}")
    ax.set_xlabel("staleness $\\tau$ (server updates between read and apply)")
    ax.set_ylabel("applied gradients")
    ax.set_yscale("log")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return ax


def progress_figure(histories: dict, axes=None, slow=()):
    """One panel per run: each worker's steps against its own simulated clock
    (``History.worker_time``; the ranks in ``slow`` drawn thick)."""
    if axes is None:
        cols = min(len(histories), 2)  # for the column: two panels a row
        rows = -(-len(histories) // cols)
        _, grid = plt.subplots(rows, cols, figsize=(6.8, 2.8 * rows), sharey=True, squeeze=False)
        for ax in grid.flat[len(histories):]:
            ax.set_visible(False)
        axes = grid.flat[:len(histories)]
    for ax, (spec, h) in zip(axes, histories.items()):
        steps = np.array(h.steps)
        for w, t in enumerate(np.array(h.worker_time).T):
            ax.plot(t * 1e3, steps, color=color_of(spec), lw=3 if w in slow else 0.8, alpha=1 if w in slow else 0.7)
        ax.set_title(spec, fontsize=9)
        ax.set_xlabel("simulated time (ms)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("steps done")
    return axes


def accuracy_time_figure(histories: dict, ax=None, rank: int = 0, title: str | None = None):
    """Test accuracy of rank ``rank``'s model (evaluated every ``eval_every`` steps) against
    that rank's own simulated clock (``History.worker_time``)."""
    ax = ax or plt.gca()
    for spec, h in histories.items():
        acc = np.array(h.test_accuracy)
        keep = ~np.isnan(acc)
        t = np.array(h.worker_time)[:, rank][keep] * 1e3
        color, ls = styles(histories)[spec]
        ax.plot(t, acc[keep], "o", ls=ls, ms=3, color=color, label=spec)
    ax.set_xlabel(f"simulated time of rank {rank} (ms)")
    ax.set_ylabel(f"test accuracy (rank {rank}'s model)")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return ax


def straggler_panel(staleness: int = 2, slowdown: float = 4.0, *, workers: int = 8, steps: int = 60,
                    eta: float = 0.15, momentum: float = 0.9, flops: float = 1e9, link: str = "10GbE",
                    seed: int = 0, backups: int = 1):
    """The widget's figure: BSP, SSP(staleness), ASP and backup workers with the last rank
    ``slowdown`` times slower. Stacked for the column: rank 0's test accuracy against its own clock;
    when a fast worker (rank 0) and the straggler finish; the staleness of the applied
    gradients. Returns (figure, {spec: (trainer, history)})."""
    if slowdown < 1:
        raise ValueError(f"slowdown must be >= 1 (a factor on the straggler's compute time), got {slowdown!r}")
    net = Network(link, flops=flops, slowdown={workers - 1: float(slowdown)})
    specs = ["bsp", f"ssp(staleness={int(staleness)})", "asp", f"backup(backups={backups})"]
    runs = run_syncs(specs, workers=workers, steps=steps, net=net, eta=eta, momentum=momentum, seed=seed,
                     eval_every=max(1, steps // 10))
    out = runs
    fig, (left, mid, right) = plt.subplots(3, 1, figsize=(6.8, 10))
    accuracy_time_figure({s: v[1] for s, v in out.items()}, ax=left, title="test accuracy against rank 0's clock")
    y = np.arange(len(out))
    fast = [v[1].worker_time[-1][0] * 1e3 for v in out.values()]
    slow = [v[1].worker_time[-1][-1] * 1e3 for v in out.values()]
    mid.barh(y - 0.2, fast, height=0.4, color=[color_of(s) for s in out], label="rank 0 (fast)")
    mid.barh(y + 0.2, slow, height=0.4, color=[color_of(s) for s in out], alpha=0.45,
             label=f"rank {workers - 1} (x{slowdown:g})")
    mid.set_yticks(y, list(out))
    mid.invert_yaxis()
    mid.set_xlabel(f"simulated time to finish {steps} steps (ms)")
    mid.legend(fontsize=8)
    mid.set_title("who finishes when", fontsize=9)
    staleness_histogram({s: v[1] for s, v in out.items()}, ax=right, title="staleness of the applied gradients")
    run0 = next(iter(out.values()))[0]
    fig.suptitle(describe(run0, steps, lr=f"lr {eta:g} (BSP, backup), {eta:g}/{workers} per gradient (SSP, ASP)"),
                 fontsize=9)
    fig.tight_layout()
    return fig, out


def sync_explorer(staleness: int = 2, slowdown: float = 4.0, workers: int = 8, steps: int = 60,
                  eta: float = 0.15, momentum: float = 0.9, flops: float = 1e9, link: str = "10GbE",
                  seed: int = 0):
    """BSP, SSP(phi), ASP and one backup worker with a persistent straggler (the last rank,
    ``slowdown`` times slower), drawn by :func:`straggler_panel`: rank 0's
    test accuracy against its clock, who finishes when, and the staleness of the applied
    gradients. Controls: the staleness bound phi and the straggler's slowdown."""
    import ipywidgets as w

    def draw(s, factor):
        return straggler_panel(s, factor, workers=workers, steps=steps, eta=eta, momentum=momentum,
                               flops=flops, link=link, seed=seed)[0]

    controls = dict(
        s=w.IntSlider(value=staleness, min=0, max=16, description="staleness φ", continuous_update=False),
        factor=w.FloatSlider(value=slowdown, min=1.0, max=10.0, step=0.5, description="slowdown",
                             continuous_update=False),
    )
    return explorer.explore(draw, controls)
