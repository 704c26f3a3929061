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
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from .history import History

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
    from .data import label_histogram

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
