"""Figures of the compression chapters 06-07 and chapter 07's widget (each figure returns its matplotlib Axes): the accuracy-bytes
frontier, time to accuracy split into compute, compression and communication, and the
error-bytes trade-off of one compressor on one gradient (the panel behind the widget)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.ticker import FuncFormatter

from .. import compress
from . import explorer

# which chapter's idea a compressor is: quantization (06), sparsification or low rank (07)
FAMILY = {"fp16": "quantization", "bf16": "quantization", "qsgd": "quantization", "terngrad": "quantization",
          "signsgd": "quantization", "signum": "quantization", "onebit": "quantization",
          "scaled_sign": "quantization", "ef_signsgd": "quantization", "natural": "quantization",
          "rotated": "quantization", "diana": "quantization", "laq": "quantization",
          "topk": "sparsification", "randk": "sparsification", "threshold": "sparsification",
          "dgc": "sparsification", "gtopk": "sparsification", "powersgd": "low rank", "atomo": "low rank"}
STYLE = {"quantization": ("tab:blue", "o"), "sparsification": ("tab:orange", "^"), "low rank": ("tab:green", "s"),
         "none": ("black", "*")}


def family(spec) -> str:
    """"quantization", "sparsification", "low rank", or "none" for no compressor."""
    if spec in (None, "none"):
        return "none"
    name = str(spec).split("(")[0].split("+")[0].strip()
    if name not in FAMILY:
        raise ValueError(f"unknown compressor {name!r}; valid: {', '.join(FAMILY)}")
    return FAMILY[name]


def _megabytes(ax):
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1e6:g} MB"))


OFFSETS = ((4, 5), (4, -12), (-4, 5), (-4, -12), (4, 14), (4, -21), (-4, 14), (-4, -21))  # label places (points)


def _place_labels(ax, items, fontsize=7):
    """Annotate (x, y, text) items, each at the first offset of OFFSETS whose text box (its
    size estimated from the font) does not overlap a box placed before or another marker."""
    fig = ax.figure
    fig.canvas.draw()
    scale = fig.dpi / 72  # points -> pixels
    marks = [ax.transData.transform((x, y)) for x, y, _ in items]
    r = 5 * scale  # a marker's half width
    boxes = [(mx - r, my - r, mx + r, my + r) for mx, my in marks]
    for (x, y, text), (mx, my) in zip(items, marks):
        w, h = 0.6 * fontsize * len(text) * scale, fontsize * scale
        for dx, dy in OFFSETS:
            x0 = mx + dx * scale - (w if dx < 0 else 0)
            box = (x0, my + dy * scale, x0 + w, my + dy * scale + h)
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in boxes):
                break
        boxes.append(box)
        far = dict(arrowprops=dict(arrowstyle="-", lw=0.5, color="0.5")) if abs(dy) > 12 else {}
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=fontsize,
                    ha="right" if dx < 0 else "left", **far)


def frontier_figure(points, ax=None, title=None):
    """Final test accuracy against total bytes sent per worker (log x), one marker per run;
    runs with the same bytes and accuracy share a marker and a label.

    points: list of dicts with "label", "bytes", "accuracy", "family" (see :func:`family`);
    the "none" point, the uncompressed reference, also draws dashed lines at its accuracy
    and bytes."""
    ax = ax or plt.subplots(figsize=(6.8, 4.8))[1]
    groups: dict = {}
    for p in points:
        groups.setdefault((round(p["bytes"]), round(p["accuracy"], 6), p["family"]), []).append(p["label"])
    seen, items = set(), []
    for (nbytes, acc, fam), labels in sorted(groups.items()):
        color, marker = STYLE[fam]
        name = None if fam in seen else ("uncompressed" if fam == "none" else fam)
        seen.add(fam)
        ax.scatter(nbytes, acc, color=color, marker=marker, s=110 if fam == "none" else 45, label=name, zorder=3)
        items.append((nbytes, acc, ", ".join(labels)))
        if fam == "none":
            ax.axhline(acc, color="black", ls="--", lw=0.8, zorder=1)
            ax.axvline(nbytes, color="black", ls=":", lw=0.8, zorder=1)
    ax.set_xscale("log")
    _megabytes(ax)
    ax.set_xlabel("bytes sent per worker over the run (log scale)")
    ax.set_ylabel("final test accuracy")
    ax.set_title(title or "Accuracy against bytes", fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    ax.grid(True, which="major", alpha=0.3)
    _place_labels(ax, items)
    return ax


PARTS = (("compute", "tab:gray"), ("compression", "tab:red"), ("communication", "tab:blue"))


def time_to_accuracy_figure(rows: dict, ax=None, title=None, reference="uncompressed", xmax=None):
    """Horizontal stacked bars, fastest at the top: seconds to the target accuracy, split into
    compute, compression and communication. rows: {label: (compute s, compression s,
    communication s)}, or None for a run that never reached the target (listed at the bottom).
    ``xmax``: cut longer bars at this many seconds (their total is still written)."""
    ax = ax or plt.subplots(figsize=(6, 6))[1]
    done = sorted((sum(v), k) for k, v in rows.items() if v is not None)
    order = [k for _, k in done] + [k for k, v in rows.items() if v is None]
    longest = max([sum(v) for v in rows.values() if v is not None] or [1.0])
    limit = min(xmax, longest) if xmax else longest
    for y, k in enumerate(order):
        left = 0.0
        for (part, color), seconds in zip(PARTS, rows[k] or (0.0, 0.0, 0.0)):
            width = max(0.0, min(seconds, limit - left))
            ax.barh(y, width, left=left, color=color, label=part if y == 0 else None)
            left += width
        total = sum(rows[k]) if rows[k] is not None else None
        note = "target not reached" if total is None else f" {total:.3g} s" + (" >" if total > limit else "")
        ax.annotate(note, (left, y), xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(range(len(order)), order, fontsize=8)
    for tick in ax.get_yticklabels():
        if tick.get_text() == reference:
            tick.set_fontweight("bold")
    ax.invert_yaxis()
    ax.set_xlabel("time to target accuracy (s)" + (f", bars cut at {limit:.3g} s" if longest > limit else ""))
    ax.set_title(title or "Time to accuracy", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_xlim(0, 1.25 * limit)
    return ax


# ----- the error-bytes trade-off on one gradient (the widget's panel) ---------------------------
TRADEOFF = {  # family: (parameter, values swept, spec for one value)
    "topk": ("ratio", (0.001, 0.003, 0.01, 0.03, 0.1, 0.3), "topk({})"),
    "randk": ("ratio", (0.01, 0.03, 0.1, 0.3, 0.6, 0.9), "randk({})"),
    "threshold": ("tau", (0.1, 0.03, 0.01, 0.003, 0.001, 0.0003), "threshold({})"),
    "powersgd": ("rank", (1, 2, 4, 8, 16), "powersgd(rank={}, error_feedback=False)"),
    "atomo": ("rank", (1, 2, 4, 8, 16), "atomo(rank={})"),
    "qsgd": ("levels", (1, 2, 4, 16, 64), "qsgd(levels={})"),
}
POWER_ITERATIONS = 3  # PowerSGD: warm-started calls on the same matrix, as in a few training steps


def reconstruct(x: torch.Tensor, fam: str, value):
    """(C(x), payload bytes) for compressor family ``fam`` at parameter ``value``. PowerSGD
    runs POWER_ITERATIONS warm-started calls on x (no error feedback), as its subspace would
    after a few steps of a slowly changing gradient; the others one call (seed 0)."""
    if fam not in TRADEOFF:
        raise ValueError(f"unknown family {fam!r}; valid: {', '.join(TRADEOFF)}")
    c = compress.get(TRADEOFF[fam][2].format(value))
    for _ in range(POWER_ITERATIONS if fam == "powersgd" else 1):
        p = c.compress(x, key=0)
    return c.decompress(p), p.nbytes


def relative_error(x: torch.Tensor, y: torch.Tensor) -> float:
    """||x - y||^2 / ||x||^2."""
    return float((x - y).pow(2).sum() / x.pow(2).sum())


def tradeoff(x: torch.Tensor, fam: str, values=None) -> list[tuple]:
    """[(value, payload bytes, relative error)] over the family's sweep (or ``values``)."""
    out = []
    for v in values or TRADEOFF[fam][1]:
        y, nbytes = reconstruct(x, fam, v)
        out.append((v, nbytes, relative_error(x, y)))
    return out


def tradeoff_figure(x: torch.Tensor, fam: str = "topk", value=0.01, axes=None, families=tuple(TRADEOFF),
                    name="x"):
    """Top: relative error ||x - C(x)||^2 / ||x||^2 against payload bytes for each family's
    sweep, with the chosen (family, value) marked. Below: x and C(x) as matrices (x is
    viewed as (rows, -1)). ``name`` says what x is, in the figure's title."""
    if axes is None:
        fig = plt.figure(figsize=(6.8, 7.4))  # for the column: the sweep on top, x and C(x) below
        rows = fig.add_gridspec(2, 1, height_ratios=[1.1, 1])
        left = fig.add_subplot(rows[0])
        below = rows[1].subgridspec(1, 2)
        axes = (left, fig.add_subplot(below[0]), fig.add_subplot(below[1]))
        fig.suptitle(f"One compression of {name} ({' x '.join(map(str, x.shape))}, fp32): error against bytes",
                     fontsize=10)
    left, orig, rec = axes
    dense = 4 * x.numel()
    for f in families:
        pts = tradeoff(x, f)
        left.plot([b for _, b, _ in pts], [max(e, 1e-6) for _, _, e in pts], marker=".", lw=1,
                  alpha=1.0 if f == fam else 0.35, label=f)
    y, nbytes = reconstruct(x, fam, value)
    err = relative_error(x, y)
    left.scatter([nbytes], [max(err, 1e-6)], s=120, facecolors="none", edgecolors="k", zorder=4)
    left.axvline(dense, color="k", ls=":", lw=0.8)
    left.axhline(1.0, color="k", ls="--", lw=0.6)
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("payload bytes (dotted: fp32 dense)")
    left.set_ylabel(r"relative error $\|x - C(x)\|^2 / \|x\|^2$")
    left.set_title(f"{fam}, {TRADEOFF[fam][0]} = {value}: {nbytes:,} B ({dense / nbytes:.1f}x smaller), "
                   f"error {err:.3g}", fontsize=9)
    left.legend(fontsize=7)
    left.grid(True, which="major", alpha=0.3)
    m = x.reshape(x.shape[0], -1) if x.dim() > 1 else x.reshape(1, -1)
    lim = float(m.abs().max())
    for ax, mat, name in ((orig, m, "gradient x"), (rec, y.reshape(m.shape), f"C(x), {fam}")):
        ax.imshow(mat.numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("column")
    orig.set_ylabel("row")
    return axes


def compression_explorer(x, family: str = "topk", value=0.01, name: str = "a gradient"):
    """One compressor on one gradient ``x`` (``name`` says which, in the title): relative
    error against payload bytes for every family's sweep, the chosen point marked, and x
    beside C(x) as matrices (:func:`tradeoff_figure`). Controls:
    family, and its parameter (ratio, tau, rank or levels) from the family's sweep."""
    import ipywidgets as w

    def draw(fam, val):
        if val not in values[fam]:  # the family changed and its own sweep is on its way
            val = values[fam][0]
        axes = tradeoff_figure(x, fam, val, name=name)
        axes[0].figure.tight_layout()
        return axes

    values = {f: list(sweep) for f, (_, sweep, _) in TRADEOFF.items()}
    fam = w.Dropdown(options=list(TRADEOFF), value=family, description="compressor")
    val = w.SelectionSlider(options=values[family], value=value if value in values[family] else values[family][0],
                            description=TRADEOFF[family][0], continuous_update=False)

    def switch(change):  # a new family brings its own parameter and sweep
        val.options = values[change["new"]]
        val.description = TRADEOFF[change["new"]][0]

    fam.observe(switch, names="value")
    return explorer.explore(draw, dict(fam=fam, val=val))

