"""Figures of the quantization chapter (06), the statistics behind them, and its widget.

* :func:`error_stats`: bits per coordinate of a compressor's payload on a tensor x, and its
  relative error E ||C(x) - x||^2 / ||x||^2 and relative bias ||E C(x) - x||^2 / ||x||^2,
  estimated from ``draws`` calls. Call t of a compressor draws from its own seeded stream,
  so the estimates are deterministic.
* :func:`variance_bits_figure`: relative error against bits per coordinate (log-log).
* :func:`coding_figure`: bits per coordinate of the QSGD levels under several codes,
  beside their entropy.
* :func:`accuracy_bytes_figure`: final test accuracy against bytes sent per worker, hollow
  markers without error feedback, filled with it.
* :func:`error_histogram`: the distribution of C(x) - x (the panel of the widget
  :func:`quantizer_explorer`).

(Chapter 07's figures live in :mod:`commlab.chapters.ch07`.)
"""
from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch

from .. import compress
from . import explorer

# the widget's menu: name -> spec; "{levels}" is filled in for the quantizers with levels
QUANTIZERS = {"qsgd": "qsgd(levels={levels})", "rotated": "rotated(levels={levels})", "terngrad": "terngrad",
              "natural": "natural", "onebit": "onebit", "scaled_sign": "scaled_sign", "signsgd": "signsgd",
              "fp16": "fp16", "bf16": "bf16"}


def quantizer_spec(name: str, levels: int = 4) -> str:
    """The compressor spec for a name of :data:`QUANTIZERS` (``levels`` where it has levels)."""
    if name not in QUANTIZERS:
        raise ValueError(f"unknown quantizer {name!r}; valid: {', '.join(QUANTIZERS)}")
    return QUANTIZERS[name].format(levels=levels)


@dataclass
class ErrorStats:
    """What :func:`error_stats` measures. ``bias_ratio`` = draws x rel_bias / rel_error is
    about 1 for an unbiased compressor (the mean of n independent draws has 1/n of the
    variance of one draw) and about ``draws`` for a deterministic, biased one."""

    spec: str
    bits: float
    rel_error: float
    rel_bias: float
    draws: int

    @property
    def bias_ratio(self) -> float:
        """draws x rel_bias / rel_error: about 1 unbiased, about ``draws`` biased (0 if no error)."""
        return self.draws * self.rel_bias / self.rel_error if self.rel_error > 0 else 0.0


def _draws(x: torch.Tensor, spec: str, draws: int):
    """(draws x d float64 matrix of C(x), mean payload bytes) from one fresh compressor."""
    c = compress.get(spec)
    out, nbytes = [], 0
    for _ in range(draws):
        p = c.compress(x)
        out.append(c.decompress(p).reshape(-1).double())
        nbytes += p.nbytes
    return torch.stack(out), nbytes / draws


def _stats(x64: torch.Tensor, ys: torch.Tensor, spec: str, nbytes: float) -> ErrorStats:
    norm2 = float(x64.pow(2).sum())
    if norm2 == 0:
        raise ValueError("error_stats needs a nonzero tensor")
    err = float((ys - x64).pow(2).sum(1).mean())
    bias = float((ys.mean(0) - x64).pow(2).sum())
    return ErrorStats(spec, 8 * nbytes / x64.numel(), err / norm2, bias / norm2, ys.shape[0])


def error_stats(x: torch.Tensor, spec: str, draws: int = 100) -> ErrorStats:
    """Bits per coordinate (8 nbytes / d, averaged over the draws: variable-length codes
    change size), relative error and relative bias of compressor ``spec`` on x, from
    ``draws`` calls of one fresh, stateless compressor."""
    if draws < 2:
        raise ValueError(f"draws={draws!r}: need at least 2 draws to estimate a bias")
    ys, nbytes = _draws(x, spec, draws)
    return _stats(x.reshape(-1).double(), ys, spec, nbytes)


def variance_bits_figure(series: dict, bound=None, ax=None, title=None):
    """Relative error against bits per coordinate, log-log. series: {label: [(bits, error),
    ...]} (a line through several points, a marker for one); bound: [(bits, value)] drawn
    dashed; a dotted line at error 1, where ||C(x) - x|| reaches ||x||."""
    ax = ax or plt.subplots(figsize=(6.5, 4.2))[1]
    markers = "osD^v<>ph*"
    for k, (label, pts) in enumerate(series.items()):
        pts = sorted(pts)
        ax.plot([b for b, _ in pts], [e for _, e in pts], marker=markers[k % len(markers)],
                ls="-" if len(pts) > 1 else "none", label=label)
    if bound:
        pts = sorted(bound)
        ax.plot([b for b, _ in pts], [v for _, v in pts], "k--", lw=1, label="QSGD bound min(U/s², √U/s)")
    ax.axhline(1.0, color="gray", ls=":", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bits per coordinate on the wire (8 × payload bytes / d)")
    ax.set_ylabel(r"relative error $E\|C(x)-x\|^2 / \|x\|^2$")
    ax.set_title(title or "Error against bits", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(True, which="major", alpha=0.3)
    return ax


CODES = (("fixed", "fixed width ⌈log2(s+1)⌉"), ("gamma", "Elias gamma of l+1"), ("huffman", "Huffman"),
         ("entropy", "entropy"))


def coding_figure(levels, reports, ax=None, title=None):
    """Bits per coordinate of the QSGD levels (the sign bit not counted) against s, one
    line per code. reports: for each s, a dict as returned by
    :func:`commlab.compress.coding.coding_report`."""
    ax = ax or plt.subplots(figsize=(6.5, 4.2))[1]
    for key, label in CODES:
        style = dict(color="k", ls="--") if key == "entropy" else dict(marker="o")
        ax.plot(levels, [r[key] for r in reports], label=label, **style)
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(levels), [str(s) for s in levels])
    ax.minorticks_off()
    ax.set_xlabel("QSGD levels s")
    ax.set_ylabel("bits per coordinate for the level")
    ax.set_title(title or "Coding the levels", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return ax


def accuracy_bytes_figure(runs, ax=None, title=None):
    """Final test accuracy against bytes sent per worker (log x). runs: list of dicts with
    "label", "bytes", "accuracy" and "ef" (error feedback: filled marker, else hollow); one
    colour per compressor (the label before "+ef"), each run named in the legend (to the
    right of the axes). The run labelled "none" (uncompressed) is a black star with dashed
    lines at its accuracy and bytes."""
    ax = ax or plt.subplots(figsize=(6.8, 4.4))[1]
    colors = {}
    for r in runs:
        if r["label"] == "none":
            ax.scatter(r["bytes"], r["accuracy"], marker="*", s=160, color="k", zorder=4, label="uncompressed")
            ax.axhline(r["accuracy"], color="k", ls="--", lw=0.8)
            ax.axvline(r["bytes"], color="k", ls=":", lw=0.8)
            continue
        color = colors.setdefault(r["label"].split("+")[0], f"C{len(colors) % 10}")
        ax.scatter(r["bytes"], r["accuracy"], s=55, zorder=3, edgecolors=color, linewidths=1.5,
                   facecolors=color if r["ef"] else "none", label=r["label"])
    ax.set_xscale("log")
    ax.set_xlabel("bytes sent per worker over the run (log scale)")
    ax.set_ylabel("final test accuracy")
    ax.set_title(title or "Accuracy against bytes (filled: with error feedback)", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax.grid(True, which="major", alpha=0.3)
    return ax


def error_histogram(x: torch.Tensor, spec: str, draws: int = 20, bins: int = 80, ax=None):
    """Histogram of the errors C(x)_i - x_i over ``draws`` calls, in units of the rms value
    of x, with the measured bits per coordinate, relative error and bias in the title."""
    ax = ax or plt.subplots(figsize=(6.5, 3.8))[1]
    x64 = x.reshape(-1).double()
    ys, nbytes = _draws(x, spec, max(draws, 2))
    st = _stats(x64, ys, spec, nbytes)
    rms = float(x64.pow(2).mean().sqrt())
    errors = ys - x64
    ax.hist((errors / rms).reshape(-1).numpy(), bins=bins, color="tab:blue", alpha=0.8)
    ax.axvline(0.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel(r"error $(C(x)_i - x_i)$ / rms$(x)$")
    ax.set_ylabel(f"count ({draws} draws × {x.numel():,} coordinates)")
    kind = "unbiased" if st.bias_ratio < 2 else "biased"
    ax.set_title(f"{spec}: {st.bits:.2f} bits/coordinate, relative error {st.rel_error:.3g}, "
                 f"looks {kind} (bias ratio {st.bias_ratio:.3g})", fontsize=9)
    return ax


def quantizer_explorer(x, quantizer: str = "qsgd", levels: int = 4, draws: int = 20):
    """The errors C(x)_i - x_i of one quantizer on the vector ``x``, as a histogram over
    ``draws`` calls, with its bits per coordinate, relative error and bias in the title
    (:func:`error_histogram`). Controls: quantizer, levels s (QSGD and
    rotated quantization; the others have none), number of draws."""
    import ipywidgets as w

    def draw(name, s, n):
        fig, ax = plt.subplots(figsize=(6.8, 3.8))
        error_histogram(x, quantizer_spec(name, s), draws=n, ax=ax)
        fig.tight_layout()
        return fig

    controls = dict(
        name=w.Dropdown(options=list(QUANTIZERS), value=quantizer, description="quantizer"),
        s=w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128, 255], value=levels, description="levels s",
                            continuous_update=False),
        n=w.IntSlider(value=draws, min=2, max=100, description="draws", continuous_update=False),
    )
    return explorer.explore(draw, controls)
