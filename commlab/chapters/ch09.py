"""Chapter 09 (decentralized training): the runs, tables, figures and widget of the chapter
(each figure returns its matplotlib Axes). Runs are cached by their settings, so that a table,
a figure and the widget's default share one training run; a run that diverges is cached as
its :class:`~commlab.history.Diverged`. Times on other networks are recomputed from the closed
forms (compute, plus a ring all-reduce or a gossip step of the bytes the run really sent)."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ..arch import ring
from ..decentral import gossip
from ..decentral import topology as topology_pkg
from ..decentral.tuning import GRID, tune_gamma
from ..history import Diverged
from ..net import Network
from ..net.link import LinkModel
from ..train import Trainer
from . import explorer

WORKERS, STEPS, FLOPS = 8, 100, 1e9  # a slow device (1 GFLOP/s), so that compute is not nothing
# 357 test digits leave 1440 to train on: shards of 180 = 5 batches of 36, so every step computes
# the same and a run's clock is exactly the closed form, step after step
SETUP = dict(model="mlp", data="digits", data_kw={"test_fraction": 357 / 1797}, batch_size=36, lr=0.4, seed=0,
             eval_every=5, progress=False)
TUNE_STEPS = 50


def qsgd(bits: int) -> str:
    """QSGD at "b bits" as Koloskova et al.'s code defines it: s = 2^b - 1 levels (our packed
    wire then spends 1 + b bits per coordinate: a sign and a level)."""
    return f"qsgd(levels={2 ** bits - 1})"


COMPRESSORS = {"QSGD 16 bits": qsgd(16), "QSGD 8 bits": qsgd(8), "QSGD 4 bits": qsgd(4), "QSGD 2 bits": qsgd(2),
               "random 10%": "randk(0.1)", "random 1%": "randk(0.01)", "top 10%": "topk(0.1)",
               "top 1%": "topk(0.01)", "sign + norm": "scaled_sign"}
METHODS = {"DCD-PSGD": "dcd_psgd", "ECD-PSGD": "ecd_psgd", "CHOCO-SGD": "choco"}
# Koloskova, Lin, Stich and Jaggi (ICLR 2020), Table 1: ResNet-20 on CIFAR-10, ring of 8, test
# accuracy (%), mean of 3 runs; None: diverges; a string: 2 of 3 runs diverged.
PAPER = {"QSGD 16 bits": (92.51, 92.02, 92.34), "QSGD 8 bits": (92.36, 59.11, 92.30),
         "QSGD 4 bits": (23.56, None, 91.92), "QSGD 2 bits": (None, None, 91.41),
         "random 10%": (None, None, 91.87), "random 1%": (None, None, 91.32),
         "top 10%": (91.97, "16.78*", 92.29), "top 1%": (89.79, "18.03*", 91.73),
         "sign + norm": (92.40, None, 92.46)}
PAPER_ALLREDUCE = 92.64

_CACHE: dict = {}


def run(sync: str, compress=None, topology: str = "ring", workers: int = WORKERS, steps: int = STEPS,
        slowdown=None, link="10GbE"):
    """The History of one run (cached), or the Diverged it raised. ``sync="bsp"`` runs over a
    ring all-reduce, anything else over gossip on ``topology``."""
    arch = "ring" if sync == "bsp" else f"gossip(topology={topology!r})"
    key = (sync, compress, arch, workers, steps, str(link), tuple(sorted((slowdown or {}).items())))
    if key not in _CACHE:
        try:
            _CACHE[key] = Trainer(workers=workers, sync=sync, arch=arch, compress=compress,
                                  net=Network(link, flops=FLOPS, slowdown=slowdown), **SETUP).fit(steps=steps)
        except Diverged as e:
            _CACHE[key] = e
    return _CACHE[key]


def model_size() -> tuple[int, float]:
    """(parameters, training FLOPs of one worker's step) of the chapter's model."""
    if "size" not in _CACHE:
        t = Trainer(workers=1, **SETUP)
        _CACHE["size"] = (t.num_params, t.flops_per_sample * t.config.batch_size)
    return _CACHE["size"]


def tuned_gamma(spec, topology: str = "ring", workers: int = WORKERS) -> float:
    """CHOCO's gamma for ``spec`` on CHOCO-Gossip alone (:mod:`commlab.decentral.tuning`), cached."""
    key = ("gamma", spec, topology, workers)
    if key not in _CACHE:
        _CACHE[key] = tune_gamma(spec, topology, workers, model_size()[0], GRID, TUNE_STEPS)
    return _CACHE[key]


def choco(spec, topology: str = "ring", workers: int = WORKERS, gamma=None, **kw):
    """A CHOCO-SGD run with ``gamma`` (default: tuned on the gossip)."""
    gamma = tuned_gamma(spec, topology, workers) if gamma is None else gamma
    return run(f"choco(gamma={gamma:g})", spec, topology, workers, **kw)


def outcome(r, what: str = "accuracy") -> str:
    """A table cell: "diverged at step k", or the final test accuracy (%) or consensus distance."""
    if isinstance(r, Diverged):
        return f"diverged at step {r.step}"
    return f"{100 * r.final_accuracy:.1f}" if what == "accuracy" else f"{r.consensus[-1]:.3g}"


def table1(results: dict) -> pd.DataFrame:
    """Ours beside the paper's: {(compressor label, method): History or Diverged} -> one row per
    compressor, columns (method, "ours" / "paper")."""
    cell = lambda p: "diverges" if p is None else str(p)  # noqa: E731
    return pd.DataFrame.from_dict({label: {k: v for m, method in enumerate(METHODS) for k, v in (
        ((method, "ours"), outcome(results[label, method])), ((method, "paper"), cell(PAPER[label][m])))}
        for label in COMPRESSORS}, orient="index")


# ----- time on the simulated clock ------------------------------------------------------------
def payload_bytes(h, degree: int) -> float:
    """Bytes one worker sent one neighbour per step in the run (all steps and workers alike)."""
    sent = {b for row in h.bytes_sent for b in row}
    if len(sent) != 1:
        raise ValueError(f"the run's bytes per step vary ({sorted(sent)[:4]}...): no single step time")
    return sent.pop() / degree


def step_seconds(kind: str, nbytes: float, link, workers: int = WORKERS, degree: int = 2) -> float:
    """Closed-form seconds of one step: compute at FLOPS, then a ring all-reduce of ``nbytes``
    (``kind="allreduce"``) or a gossip step of ``nbytes`` per message over ``degree`` neighbours."""
    comm = ring.cost(nbytes, workers, link) if kind == "allreduce" else gossip.cost(nbytes, degree, link)
    return model_size()[1] / FLOPS + comm


def steps_to_loss(h, target: float):
    """The first evaluated step whose test loss (of the average model) is <= target, or None."""
    if isinstance(h, Diverged):
        return None
    return next((s for s, l in zip(h.steps, h.test_loss) if l <= target), None)


def time_grid(entries: dict, alphas, betas, workers: int = WORKERS, degree: int = 2) -> dict:
    """{label: seconds to the target, shape (len(betas), len(alphas))} from {label: (kind, bytes
    per message, steps to the target or None)}: inf where the run never reached it."""
    out = {}
    for label, (kind, nbytes, steps) in entries.items():
        out[label] = np.array([[math.inf if steps is None else
                                steps * step_seconds(kind, nbytes, LinkModel(a, b), workers, degree)
                                for a in alphas] for b in betas])
    return out


def grid_figure(grid: dict, alphas, betas, axes=None):
    """One panel per method, two to a row: its time to the target over the best method's at each
    (alpha, beta), log colour (1 = the fastest there); never reaching it is grey."""
    labels = list(grid)
    if axes is None:
        rows = -(-len(labels) // 2)
        axes = list(plt.subplots(rows, 2, figsize=(6.8, 0.6 + 2.3 * rows), sharex=True, sharey=True)[1].flat)
        while len(axes) > len(labels):  # an odd number of methods: drop the last panel
            axes.pop().remove()
    best = np.min(np.stack(list(grid.values())), axis=0)
    for k, (ax, label) in enumerate(zip(axes, labels)):
        ratio = np.ma.masked_invalid(np.log10(grid[label] / best))
        im = ax.pcolormesh(np.array(alphas) * 1e6, 8e-9 / np.array(betas), ratio, vmin=0, vmax=2,
                           cmap="viridis_r", shading="nearest")
        ax.set(facecolor="0.8", xscale="log", yscale="log")
        ax.set_xlabel("latency alpha (us)" if k >= len(labels) - 2 else "")
        ax.set_ylabel("bandwidth (Gb/s)" if k % 2 == 0 else "")
        ax.set_title(label, fontsize=9)
    plt.colorbar(im, ax=list(axes), label="log10(time / fastest)", shrink=0.9)
    return axes


# ----- figures of runs ----------------------------------------------------------------------
def curves(runs: dict, column: str = "consensus", x: str = "step", ax=None, title=None, logy=True):
    """One line per run of {label: History or Diverged}: a History column against the step or
    the simulated time; a diverged run is named in the legend."""
    ax = ax or plt.subplots(figsize=(6, 3.6))[1]
    for label, h in runs.items():
        if isinstance(h, Diverged):
            ax.plot([], [], ls=":", label=f"{label}: diverged at step {h.step}")
            continue
        y = np.array(getattr(h, column), dtype=float)
        xs = np.array(h.sim_time if x == "sim_time" else h.steps, dtype=float)
        keep = ~np.isnan(y)
        ax.plot(xs[keep], y[keep], lw=1.2, label=label)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("simulated seconds" if x == "sim_time" else "step")
    ax.set_ylabel({"consensus": "consensus distance", "test_loss": "test loss (average model)"}.get(column, column))
    ax.set_title(title or "", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return ax


def worker_clocks_figure(runs: dict, ax=None, title=None):
    """Each worker's simulated clock at its last step, one group of bars per run."""
    ax = ax or plt.subplots(figsize=(6, 3.2))[1]
    width = 0.8 / len(runs)
    for k, (label, h) in enumerate(runs.items()):
        ax.bar(np.arange(len(h.worker_time[-1])) + k * width, h.worker_time[-1], width, label=label)
    ax.set_ylim(0, 1.3 * max(max(h.worker_time[-1]) for h in runs.values()))  # room for the legend
    ax.set_xlabel("worker")
    ax.set_ylabel("simulated seconds at its last step")
    ax.set_title(title or "", fontsize=9)
    ax.legend(fontsize=8)
    return ax


# ----- spectral gaps ---------------------------------------------------------------------------
def mixing(top, weights: str = "metropolis") -> np.ndarray:
    """W of ``top``: "metropolis" (the library's, 1/(1 + max(d_i, d_j)) per edge) or "uniform"
    (1/(1 + d_max) per edge, Koloskova et al.'s code on the ring and torus); W_ii: the rest of the row."""
    if weights == "metropolis":
        return top.mixing_matrix()
    w = np.zeros((top.n, top.n))
    for i, nb in enumerate(top.neighbors):
        w[i, list(nb)] = 1 / (1 + top.max_degree)
        w[i, i] = 1 - w[i].sum()
    return w


def gap(w: np.ndarray) -> float:
    """1 - the second largest |eigenvalue| of W."""
    ev = np.sort(np.abs(np.linalg.eigvalsh(w)))
    return float(1 - ev[-2]) if len(ev) > 1 else 1.0


def gap_table(ns=(4, 16, 36), names=("ring", "torus", "complete"), weights=("metropolis", "uniform")):
    """The spectral gap per topology (rows) and n (columns), for each weighting."""
    return pd.DataFrame({(wt, n): {name: gap(mixing(topology_pkg.get(name, n), wt)) for name in names}
                         for wt in weights for n in ns})


def gossip_decay(w: np.ndarray, steps: int, d: int = 100, seed: int = 0) -> np.ndarray:
    """Consensus error (1/n) sum_i ||x_i - x_bar||^2 of exact gossip X <- W X from random X, per step."""
    x = torch.randn(len(w), d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).numpy()
    out = []
    for _ in range(steps + 1):
        out.append(((x - x.mean(0)) ** 2).sum(1).mean())
        x = w @ x
    return np.array(out)


def decay_figure(ns=(16, 36), names=("ring", "torus", "complete"), steps: int = 60, axes=None):
    """Exact gossip's consensus error against steps, one panel per n (stacked), one line per
    topology, with the bound lambda^(2t) dashed (lambda = 1 - delta, delta the spectral gap)."""
    if axes is None:
        axes = plt.subplots(len(ns), 1, figsize=(6.8, 2.8 * len(ns)), sharex=True, squeeze=False)[1][:, 0]
    for ax, n in zip(axes, ns):
        for k, name in enumerate(names):
            w = mixing(topology_pkg.get(name, n))
            err = np.maximum(gossip_decay(w, steps), 1e-16)
            line, = ax.plot(err / err[0], color=f"C{k}", label=f"{name}, $\\delta$ = {gap(w):.3g}")
            ax.plot((1 - gap(w)) ** (2 * np.arange(steps + 1)), color=line.get_color(), ls="--", lw=0.8)
        ax.set_yscale("log")
        ax.set_ylim(1e-8, 2)
        ax.set_title(f"n = {n}: exact gossip $X \\leftarrow WX$ (dashed: the bound $\\lambda^{{2t}}$)", fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.set_ylabel("consensus error / initial")
    axes[-1].set_xlabel("gossip steps")
    return axes


# ----- the widget ---------------------------------------------------------------------------
TOPOLOGIES = ("ring", "torus", "hypercube", "exponential", "complete", "star")


def explorer_figure(topology="ring", workers=WORKERS, compressor="top 1%", gamma=None, steps=STEPS, axes=None):
    """CHOCO-SGD with ``compressor`` (a COMPRESSORS label) and ``gamma`` (default: tuned) against
    exact D-PSGD on the same graph: the consensus distance per step, and the test loss of the
    average model (stacked)."""
    if axes is None:
        axes = plt.subplots(2, 1, figsize=(6.8, 6.4))[1]
    spec = COMPRESSORS[compressor]
    gamma = tuned_gamma(spec, topology, workers) if gamma is None else gamma
    top = topology_pkg.get(topology, workers)
    runs = {"D-PSGD (exact)": run("dpsgd", None, topology, workers, steps),
            f"CHOCO, {compressor}, gamma {gamma:g}": choco(spec, topology, workers, gamma, steps=steps)}
    what = f"{top.name}, {workers} workers, spectral gap $\\delta$ = {top.spectral_gap():.3f}"
    curves(runs, "consensus", ax=axes[0], title=f"Consensus distance: {what}")
    curves(runs, "test_loss", ax=axes[1], title="Test loss of the average model", logy=False)
    return axes


def choco_explorer(topology="ring", workers=WORKERS, compressor="top 1%", gamma=None, steps=STEPS):
    """The widget: topology, workers, compressor and gamma -> :func:`explorer_figure` (each new
    setting trains two runs of ``steps`` steps, a few seconds). Draws the default first."""
    import ipywidgets as w

    gamma = tuned_gamma(COMPRESSORS[compressor], topology, workers) if gamma is None else gamma

    def draw(topology, workers, compressor, gamma):  # a ValueError (a hypercube of 12) shows its message
        axes = explorer_figure(topology, workers, compressor, gamma, steps)
        axes[0].figure.tight_layout()
        return axes

    return explorer.explore(draw, dict(topology=w.Dropdown(options=list(TOPOLOGIES), value=topology, description="topology"),
                       workers=w.SelectionSlider(options=[4, 8, 16], value=workers, description="workers",
                                                 continuous_update=False),
                       compressor=w.Dropdown(options=list(COMPRESSORS), value=compressor, description="compressor"),
                       gamma=w.SelectionSlider(options=sorted(set(GRID) | {gamma}), value=gamma, description="gamma",
                                               continuous_update=False)))
