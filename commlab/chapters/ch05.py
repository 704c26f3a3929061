"""Figures of the local SGD and FedAvg chapter (05) and the counts behind them.

A *communication round* is a step of the History in which some worker sent bytes: every
step of BSP, ASP and FedAvg, one step in H of local SGD.

* :func:`rounds`: the cumulative number of communication rounds at every step.
* :func:`measured`: the steps where the test accuracy was measured, with rounds, bytes sent
  per worker and samples so far beside it (the x axes of the figures).
* :func:`rounds_to_accuracy`: the first round count at which a run reached a test accuracy.
* :func:`accuracy_curves`: test accuracy of several runs against rounds, bytes, samples or steps.
* :func:`label_distribution`: how many samples of each class every worker holds (stacked bars),
  for IID and Dirichlet splits.
* :func:`accuracy_vs_alpha`: final accuracy against the Dirichlet concentration, one line per
  method.
* :func:`local_sgd_explorer`: the chapter's interactive panel. It shows its default
  figure (what the static website shows) and ipywidgets controls that redraw it in place
  (:mod:`commlab.chapters.explorer`). It
  trains on the fly: BSP and local SGD with period H, 8 workers, the MLP on digits, on an IID
  split or a Dirichlet split with concentration ``alpha``. Every run is cached, so moving
  back to a setting is instant; a new one takes a second or two.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..data import label_histogram, load, split_dirichlet, split_iid
from ..history import History
from ..train import Trainer
from . import explorer

X_AXES = {"rounds": "communication rounds", "bytes": "bytes sent per worker (mean)",
          "samples": "training samples (all workers)", "step": "step"}


def rounds(h: History) -> np.ndarray:
    """Cumulative communication rounds after each step: steps in which any worker sent bytes."""
    return np.cumsum([1 if any(b > 0 for b in sent) else 0 for sent in h.bytes_sent])


def measured(h: History):
    """A DataFrame of the steps with a measured test accuracy: step, rounds, bytes (mean bytes
    sent per worker so far), samples (so far, all workers), test_accuracy, test_loss."""
    df = h.to_dataframe().reset_index()
    df["rounds"] = rounds(h)
    if "cum_samples" not in df:
        df["cum_samples"] = np.nan
    df = df.rename(columns={"cum_bytes_sent_mean": "bytes", "cum_samples": "samples"})
    keep = ["step", "rounds", "bytes", "samples", "test_accuracy", "test_loss"]
    return df.dropna(subset=["test_accuracy"])[keep].reset_index(drop=True)


def rounds_to_accuracy(h: History, target: float) -> int | None:
    """The rounds a run needed until its measured test accuracy first reached ``target``
    (None if it never did). Only measured steps count, so the answer is as fine as
    ``eval_every`` allows."""
    m = measured(h)
    hit = m[m["test_accuracy"] >= target]
    return int(hit["rounds"].iloc[0]) if len(hit) else None


def accuracy_curves(histories: dict, x: str = "rounds", ax=None, logx: bool = False, styles: dict | None = None,
                    title: str | None = None):
    """Test accuracy of every run in ``histories`` ({label: History}) against ``x``: "rounds",
    "bytes", "samples" or "step". ``styles`` maps a label to extra plot keywords."""
    if x not in X_AXES:
        raise ValueError(f"unknown x axis {x!r}; valid: {', '.join(X_AXES)}")
    ax = ax or plt.gca()
    styles = styles or {}
    for label, h in histories.items():
        m = measured(h)
        ax.plot(m[x], m["test_accuracy"], label=label, **{"lw": 1.5, **styles.get(label, {})})
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(X_AXES[x] + (" (log scale)" if logx else ""))
    ax.set_ylabel("test accuracy")
    return _finish(ax, title)


def label_distribution(labels, shards, num_classes: int | None = None, ax=None, title: str | None = None):
    """Stacked bars: one bar per worker, one colour per class, the height its number of samples."""
    counts = label_histogram(torch.as_tensor(labels), shards, num_classes).numpy()
    workers, classes = counts.shape
    ax = ax or plt.gca()
    bottom = np.zeros(workers)
    cmap = plt.get_cmap("tab10" if classes <= 10 else "tab20")
    for c in range(classes):
        ax.bar(np.arange(workers), counts[:, c], bottom=bottom, color=cmap(c % cmap.N), width=0.8,
               label=str(c))
        bottom += counts[:, c]
    ax.set_xticks(np.arange(workers))
    ax.set_xlabel("worker")
    ax.set_ylabel("training samples")
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def accuracy_vs_alpha(results: dict, ax=None, title: str | None = None, iid: dict | None = None):
    """Final test accuracy against the Dirichlet concentration (log axis), one line per method.
    results: {label: {alpha: accuracy}}; iid: {label: accuracy on the IID split}, drawn as
    dotted horizontal lines in the same colour."""
    ax = ax or plt.gca()
    for k, (label, by_alpha) in enumerate(results.items()):
        alphas = sorted(by_alpha)
        ax.plot(alphas, [by_alpha[a] for a in alphas], "o-", color=f"C{k}", label=label)
        if iid and label in iid and not math.isnan(iid[label]):
            ax.axhline(iid[label], color=f"C{k}", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("Dirichlet concentration $a$ (log scale; small = skewed)")
    ax.set_ylabel("final test accuracy")
    return _finish(ax, title)


def _finish(ax, title):
    """Title (if any), light grid, small legend."""
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax


PERIODS = (1, 2, 4, 8, 16, 32, 64, 128)
ALPHAS = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0)
_CACHE: dict = {}
# Trainer options the explorer leaves at their defaults (a remembered run must too)
_DEFAULTS = dict(arch="native", compress=None, schedule=None, runtime="threads", batch_size=32, momentum=0.0,
                 weight_decay=0.0)


def run_settings(period: int, alpha: float | None, steps: int = 256, workers: int = 8, lr: float = 0.5,
                 seed: int = 0) -> dict:
    """The Trainer arguments of one explorer run: BSP for H = 1, local SGD with period H
    otherwise, evaluated after every averaging (``eval_every = H``); ``alpha=None`` is the
    IID split."""
    if period not in PERIODS:
        raise ValueError(f"period must be one of {PERIODS}, got {period!r}")
    if steps % period:
        raise ValueError(f"steps ({steps}) must be a multiple of the period ({period}), so that the run "
                         "ends on an average")
    split = dict(split="iid") if alpha is None else dict(split="dirichlet", dirichlet_alpha=alpha)
    sync = "bsp" if period == 1 else f"local_sgd(period={period})"
    return dict(model="mlp", data="digits", workers=workers, sync=sync, lr=lr, seed=seed, net="10GbE",
                eval_every=period, progress=False, **split)


def _key(settings: dict, steps: int) -> tuple:
    alpha = settings.get("dirichlet_alpha") if settings["split"] == "dirichlet" else None
    return (settings["sync"], alpha, steps, settings["workers"], settings["lr"], settings["seed"])


def _matches(h: History, settings: dict, steps: int) -> bool:
    c = h.config
    want = {**_DEFAULTS, **{k: v for k, v in settings.items() if k not in ("net", "progress")}}
    return all(c.get(k) == v for k, v in want.items()) and len(h.steps) == steps


def local_sgd_run(period: int, alpha: float | None, steps: int = 256, workers: int = 8, lr: float = 0.5,
                  seed: int = 0) -> History:
    """One explorer run (cached): see :func:`run_settings`."""
    settings = run_settings(period, alpha, steps, workers, lr, seed)
    key = _key(settings, steps)
    if key not in _CACHE:
        _CACHE[key] = Trainer(**settings).fit(steps=steps)
    return _CACHE[key]


def remember(histories, steps: int = 256, workers: int = 8, lr: float = 0.5, seed: int = 0) -> int:
    """Put runs made elsewhere into the cache: ``histories`` is {(period, alpha): History}. Each
    must have been made with :func:`run_settings` of its key (checked against its config);
    returns how many were taken."""
    for (period, alpha), h in dict(histories).items():
        settings = run_settings(period, alpha, steps, workers, lr, seed)
        if not _matches(h, settings, steps):
            raise ValueError(f"the History for (period={period}, alpha={alpha}) was not made with "
                             f"run_settings({period}, {alpha}, steps={steps}, workers={workers}, lr={lr}, "
                             f"seed={seed})")
        _CACHE[_key(settings, steps)] = h
    return len(dict(histories))


def explorer_figure(period: int = 8, alpha: float | None = 0.1, steps: int = 256, workers: int = 8,
                    lr: float = 0.5, seed: int = 0):
    """The explorer's panel: the split's classes per worker, and test accuracy against
    communication rounds for BSP and for local SGD with period H. Returns the two axes."""
    data = load("digits", seed=seed)
    shards = (split_iid(len(data.y_train), workers, seed) if alpha is None
              else split_dirichlet(data.y_train, workers, alpha, seed))
    fig, (left, right) = plt.subplots(2, 1, figsize=(6.8, 7.5))
    split = "IID split" if alpha is None else f"Dirichlet split, a = {alpha:g}"
    label_distribution(data.y_train, shards, data.num_classes, ax=left,
                                   title=f"Classes per worker ({split})")
    bsp = local_sgd_run(1, alpha, steps, workers, lr, seed)
    runs = {"BSP (H = 1)": bsp}
    finals = f"BSP {bsp.final_accuracy:.3f}"
    if period > 1:
        local = local_sgd_run(period, alpha, steps, workers, lr, seed)
        runs[f"local SGD, H = {period}"] = local
        finals += f", H = {period}: {local.final_accuracy:.3f}"
    accuracy_curves(runs, x="rounds", logx=True, ax=right,
                                title=f"MLP on digits, {workers} workers, {steps} steps, SGD step {lr}\n"
                                      f"final test accuracy: {finals}")
    right.set_ylim(0, 1)
    fig.tight_layout()
    return left, right


def local_sgd_explorer(period: int = 8, alpha: float | None = 0.1, steps: int = 256, workers: int = 8,
                       lr: float = 0.5, seed: int = 0, known=None):
    """Local SGD against BSP on IID and non-IID data. Controls: the period H and the Dirichlet
    concentration a (or IID). ``known``: runs already made, {(period, alpha): History}, so
    that the static figure trains nothing new (see :func:`remember`)."""
    import ipywidgets as w

    if known:
        remember(known, steps, workers, lr, seed)

    def draw(h, a):  # the slider's "iid" is alpha=None (a slider cannot hold None)
        return explorer_figure(h, None if a == "iid" else a, steps, workers, lr, seed)

    alphas = sorted(set(ALPHAS) | ({alpha} if alpha is not None else set()))
    options = [(f"{a:g}", a) for a in alphas] + [("IID", "iid")]
    controls = dict(
        h=w.SelectionSlider(options=list(PERIODS), value=period, description="period H", continuous_update=False),
        a=w.SelectionSlider(options=options, value="iid" if alpha is None else alpha, description="Dirichlet a",
                            continuous_update=False),
    )
    return explorer.explore(draw, controls)
