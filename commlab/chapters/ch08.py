"""Chapter 08 (scheduling): the runs, tables, figures and widget of the chapter (each figure
returns its matplotlib Axes). A timeline of one iteration on a compute and a communication
stream, from the dispatcher's messages or from a real run's ``History.timeline``; the fusion
bucket sweep; the survey's seven methods on its clusters from :mod:`commlab.sim`; the scaling
what-if; and the explorer widget. Trainer runs live here (an importable module), so that a
Gloo run's processes can find everything they need."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from .. import arch as arch_pkg
from .. import schedule as sched
from .. import sim
from ..schedule.dispatch import Message, arrivals, forward_spans
from ..train import Trainer
from . import explorer

# ----- the real runs ---------------------------------------------------------------------------
SMALL = dict(model="mlp", model_kw={"hidden": [256] * 12}, data="digits", batch_size=32, seed=0)
RUNS = {  # label: schedule spec, for the Trainer
    "bsp": None, "wfbp": "wfbp", "fusion": "fusion(mb=1, first_mb=0.25)", "mg_wfbp": "mg_wfbp",
    "bytescheduler": "bytescheduler(partition_mb=0.1, credit_mb=0.4)", "p3": "p3(slice_kb=64)", "search": "search",
}


def run(schedule, workers: int, net, steps: int, runtime: str = "threads"):
    """(Trainer, History) of the chapter's 13-layer MLP on digits under ``schedule``."""
    trainer = Trainer(workers=workers, schedule=schedule, net=net, runtime=runtime, progress=False, **SMALL)
    return trainer, trainer.fit(steps=steps)


def run_all(workers: int, net, steps: int, runtime: str = "threads", runs=RUNS) -> dict:
    """{label: (Trainer, History)} for every schedule of ``runs``."""
    return {label: run(spec, workers, net, steps, runtime) for label, spec in runs.items()}


def comm_time(workers: int, link, arch: str = "native"):
    """The ``comm_time(nbytes)`` a Trainer plans with: the architecture's closed form on ``link``."""
    a = arch_pkg.get(arch)
    return lambda n: a.time(n, workers, link)


def _as_message(m) -> Message:
    if isinstance(m, Message):
        return m
    return Message(tuple(m.get("pieces", ())), tuple(m["layers"]), int(m["bytes"]), m["ready"], m["start"], m["end"])


def step_messages(history, step: int, profile) -> list[Message]:
    """The messages of ``step`` of a real run's timeline, in seconds from that step's start of
    backward: a message is ready when its lowest layer is, ``T0 + ready(min layer)``."""
    rows = [r for r in history.timeline if r["step"] == step]
    if not rows:
        raise ValueError(f"step {step} has no messages in the timeline (steps 1..{len(history)})")
    ready = profile.ready()
    t0 = rows[0]["ready"] - ready[min(rows[0]["layers"])]
    return [Message((), tuple(r["layers"]), r["bytes"], r["ready"] - t0, r["start"] - t0, r["end"] - t0)
            for r in rows]


def groups(plan) -> list[list[int]]:
    """The layers of each message of a bucket plan, in send order."""
    if plan.buckets is None:
        raise ValueError(f"{plan.name} sends by priority: it has no fixed buckets")
    return [sorted({plan.pieces[i].layer for i in b}) for b in plan.buckets]


# ----- the graph of one iteration -------------------------------------------------------------------
def dag_figure(layers: int = 4, ax=None):
    """The dependency graph of one iteration of ``layers`` layers: forward F_l left to right,
    backward B_l right to left, a message C_l under each B_l, and the next forward F'_l, which
    needs C_l and F'_(l-1). Nodes are text boxes (the three row names first), each edge an
    arrow (an empty-text ``Annotation``)."""
    ax = ax or plt.subplots(figsize=(6.9, 2.6))[1]
    L = layers
    for y, row in ((3, "compute"), (1.5, "comm"), (0, "next forward")):
        ax.text(-0.6, y, row, ha="right", va="center", fontsize=8)
    pos, color = {}, {}
    for l in range(L):
        for node, xy, c in ((f"F_{l}", (l, 3), "tab:gray"), (f"B_{l}", (2 * L - 1 - l, 3), "tab:gray"),
                            (f"C_{l}", (2 * L - 1 - l, 1.5), "tab:blue"), (f"F'_{l}", (2 * L + l, 0), "0.55")):
            pos[node], color[node] = xy, c
    edges = [(f"F_{l}", f"F_{l + 1}") for l in range(L - 1)] + [(f"F_{L - 1}", f"B_{L - 1}")]
    edges += [(f"B_{l}", f"B_{l - 1}") for l in range(L - 1, 0, -1)]
    edges += [(f"B_{l}", f"C_{l}") for l in range(L)] + [(f"C_{l}", f"F'_{l}") for l in range(L)]
    edges += [(f"F'_{l}", f"F'_{l + 1}") for l in range(L - 1)]
    for node, (x, y) in pos.items():
        ax.text(x, y, f"${node}$", ha="center", va="center", fontsize=10, color="white",
                bbox=dict(boxstyle="round,pad=0.35", fc=color[node], ec="none"))
    for a, b in edges:
        ax.annotate("", xy=pos[b], xytext=pos[a],
                    arrowprops=dict(arrowstyle="-|>", color="0.3", lw=0.8, shrinkA=11, shrinkB=11))
    ax.set_xlim(-2.2, 3 * L)
    ax.set_ylim(-0.7, 3.7)
    ax.axis("off")
    ax.set_title(f"One iteration of {L} layers: $C_l$ may overlap $B_{{l-1}}, \\dots, B_0$; "
                 "$F'_0$ needs $C_0$, the last message", fontsize=9)
    return ax


# ----- the timeline -------------------------------------------------------------------------------
def forward_times(profile, messages, forward_waits: bool) -> list[tuple[float, float]]:
    """(start, end) of each layer's next forward (:func:`commlab.schedule.dispatch.forward_spans`)."""
    return forward_spans(profile.forward_s, sum(profile.backward_s), arrivals(messages, profile.layers),
                         forward_waits)


def timeline_figure(profile, messages, forward_waits: bool = False, ax=None, title=None):
    """One iteration from the start of backward to the end of the next forward, in ms. Row
    "compute": backward of layers L-1..0, then the next forward of layers 0..L-1; row "comm":
    every message. Colours follow the layer (a message takes its lowest layer's colour);
    a message of several layers is hatched. ``messages``: Message objects or timeline dicts."""
    ax = ax or plt.subplots(figsize=(6.9, 2.4))[1]
    messages = [_as_message(m) for m in messages]
    L, ms = profile.layers, 1e3
    color = lambda l: plt.cm.viridis(l / max(1, L - 1))  # noqa: E731
    ready = profile.ready()
    for l in range(L):
        ax.broken_barh([((ready[l] - profile.backward_s[l]) * ms, profile.backward_s[l] * ms)], (1.1, 0.8),
                       facecolors=color(l), edgecolor="white", lw=0.3)
    fwd = forward_times(profile, messages, forward_waits)
    for l, (s, e) in enumerate(fwd):
        ax.broken_barh([(s * ms, (e - s) * ms)], (1.1, 0.8), facecolors=color(l), edgecolor="k", lw=0.3,
                       alpha=0.55)
    for m in messages:
        ax.broken_barh([(m.start * ms, (m.end - m.start) * ms)], (0.1, 0.8), facecolors=color(min(m.layers)),
                       edgecolor="white", lw=0.3, hatch="//" if len(m.layers) > 1 else None)
    end = fwd[-1][1]
    ax.axvline(sum(profile.backward_s) * ms, color="0.4", ls=":", lw=0.8)
    ax.axvline(end * ms, color="k", ls="--", lw=0.8)
    ax.set_yticks([0.5, 1.5], ["comm", "compute"])
    ax.set_ylim(0, 2)
    ax.set_xlim(0, end * ms * 1.01)
    ax.set_xlabel("ms from the start of backward (dotted: backward ends;\ndashed: next forward ends)", fontsize=8)
    ax.set_title(title or f"{len(messages)} messages, iteration {end * ms:.3g} ms", fontsize=9)
    return ax


# ----- fusion ---------------------------------------------------------------------------------------
def fusion_sweep(profile, comm_time, mbs) -> list[tuple[float, float]]:
    """[(bucket MB, seconds per iteration)] for ``fusion(mb=x, first_mb=x)`` over ``mbs``."""
    return [(mb, sched.iteration(sched.get(f"fusion(mb={mb}, first_mb={mb})").plan(profile, comm_time), profile,
                                 comm_time)[0]) for mb in mbs]


def fusion_figure(sweep, ax=None, wfbp=None, bsp=None, title=None):
    """Seconds per iteration (ms) against the bucket size (log x), the best size circled, with
    WFBP's and BSP's times as horizontal lines when given."""
    ax = ax or plt.subplots(figsize=(6.5, 3.4))[1]
    x, y = [m for m, _ in sweep], [t * 1e3 for _, t in sweep]
    ax.plot(x, y, marker="o", ms=3, color="tab:blue", label="fusion(mb=x)")
    best = min(range(len(y)), key=y.__getitem__)
    ax.scatter([x[best]], [y[best]], s=120, facecolors="none", edgecolors="k", zorder=4,
               label=f"best: {x[best]:g} MB, {y[best]:.4g} ms")
    for value, name, style in ((wfbp, "WFBP (one message per layer)", "--"),
                               (bsp, "BSP (one message after backward)", ":")):
        if value is not None:
            ax.axhline(value * 1e3, color="k", ls=style, lw=0.8, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("bucket size (MB, log scale)")
    ax.set_ylabel("ms per iteration")
    ax.set_title(title or "Tensor fusion: bucket size against iteration time", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return ax


# ----- the survey's clusters (commlab.sim) ---------------------------------------------------------
NETWORKS = sim.survey.NETWORKS  # between nodes; PCIe 3.0 inside
MODELS = ("resnet50", "bert-base", "bert-large")
GPUS = (4, 8, 16, 32)
METHODS = tuple(sim.METHODS)
cluster = sim.survey.testbed  # the survey's testbed: cluster(gpus, network)


def speedups(models=MODELS, networks=tuple(NETWORKS), gpus=GPUS, methods=METHODS) -> pd.DataFrame:
    """One row per (network, model, GPUs, method): ms per iteration and speedup over one GPU."""
    rows = []
    for net in networks:
        for model in models:
            for g in gpus:
                c = cluster(g, net)
                for method in methods:
                    it = sim.iteration(model, c, method=method)
                    rows.append(dict(network=net, model=model, gpus=g, method=method, ms=it.time * 1e3,
                                     speedup=it.speedup))
    return pd.DataFrame(rows)


def error_figure(table: pd.DataFrame, ax=None):
    """Predicted against measured speedup, one point per cell of the survey's grid
    (:func:`commlab.sim.survey.compare`), log-log, the ±10% band shaded."""
    ax = ax or plt.subplots(figsize=(5.2, 4.2))[1]
    for net, t in table.groupby("network", sort=False):
        ax.scatter(t.measured, t.predicted, s=10, label=net, alpha=0.8)
    x = [0.4, 40]
    ax.plot(x, x, color="k", lw=0.8)
    ax.fill_between(x, [v * 0.9 for v in x], [v * 1.1 for v in x], color="0.85", zorder=0, label="±10%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured speedup (Shi et al. 2021)")
    ax.set_ylabel("simulated speedup")
    ax.set_title("The simulator against the survey's 252 cells", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return ax


def speedup_figure(table: pd.DataFrame, network: str, axes=None, methods=None):
    """Speedup over one GPU against GPUs (log 2), one panel per model, one line per method
    (``methods``, or every method of the table), the ideal (speedup = GPUs) dashed."""
    models = list(dict.fromkeys(table["model"]))
    methods = list(dict.fromkeys(table["method"])) if methods is None else methods
    if axes is None:
        fig, axes = plt.subplots(1, len(models), figsize=(6.9, 2.9), sharey=False, squeeze=False)
        axes = axes[0]
        fig.suptitle(f"The survey's seven methods on {network} between nodes of 4 GPUs (simulated)", fontsize=9)
    for ax, model in zip(axes, models):
        t = table[(table.network == network) & (table.model == model)]
        g = sorted(set(t.gpus))
        ax.plot(g, g, color="k", ls="--", lw=0.8, label="ideal")
        for method in methods:
            row = t[t.method == method].sort_values("gpus")
            ax.plot(row.gpus, row.speedup, marker=".", lw=1, ls="-" if method.endswith(("a2a", "wfbp")) else ":",
                    label=method)
        ax.set_xscale("log", base=2)
        ax.set_xticks(g, [str(x) for x in g])
        ax.set_ylim(0, 1.15 * float(t.speedup.max()))  # the ideal line leaves the panel where scaling is poor
        ax.set_xlabel("GPUs")
        ax.set_ylabel("speedup over 1 GPU")
        ax.set_title(model, fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left", ncol=1)
    return axes


def scaling(model: str, network: str, gpus=tuple(2 ** k for k in range(2, 11)), methods=METHODS) -> pd.DataFrame:
    """Speedups of ``methods`` from 4 to 1,024 GPUs (the what-if beyond the survey's 32)."""
    return speedups((model,), (network,), gpus, methods)


def scaling_figure(table: pd.DataFrame, ax=None, highlight=None, title=None):
    """Scaling efficiency (speedup / GPUs) against GPUs (log 2), one line per method;
    ``highlight``: (method, gpus) circled."""
    ax = ax or plt.subplots(figsize=(6.5, 3.4))[1]
    for method in dict.fromkeys(table["method"]):
        row = table[table.method == method].sort_values("gpus")
        ax.plot(row.gpus, row.speedup / row.gpus, marker=".", lw=1.5 if highlight and method == highlight[0] else 0.9,
                ls="-" if method.endswith(("a2a", "wfbp")) else ":", label=method)
    if highlight is not None:
        hit = table[(table.method == highlight[0]) & (table.gpus == highlight[1])]
        if len(hit):
            ax.scatter(hit.gpus, hit.speedup / hit.gpus, s=120, facecolors="none", edgecolors="k", zorder=4)
    g = sorted(set(table.gpus))
    ax.set_xscale("log", base=2)
    ax.set_xticks(g, [str(x) for x in g])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("scaling efficiency (speedup / GPUs)")
    ax.set_title(title or "Scaling", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    return ax


def explorer_figure(model="resnet50", network="100GbIB", gpus=32, method="mg_wfbp", axes=None):
    """Left: the timeline of one simulated iteration; right: the scaling efficiency of every
    method to 1,024 GPUs with (method, gpus) circled. Returns the two Axes."""
    if axes is None:
        fig, axes = plt.subplots(2, 1, figsize=(6.9, 6.2), gridspec_kw={"height_ratios": [1, 1.3]})
    it = sim.iteration(model, cluster(gpus, network), method=method)
    timeline_figure(it.profile, it.messages, it.plan.forward_waits, ax=axes[0],
                    title=f"{model}, {method}, {gpus} GPUs on {network}: {it.time * 1e3:.4g} ms per iteration,\n"
                          f"speedup {it.speedup:.3g} ({len(it.messages)} messages)")
    scaling_figure(scaling(model, network), ax=axes[1], highlight=(method, gpus), title=f"{model} on {network}")
    return axes


def schedule_explorer(model="resnet50", network="100GbIB", gpus=32, method="mg_wfbp"):
    """The widget: model, network between nodes, GPUs and method -> the simulated timeline and
    the scaling efficiency of every method (:func:`explorer_figure`). Draws the default first."""
    import ipywidgets as w

    def draw(model, network, gpus, method):
        axes = explorer_figure(model, network, gpus, method)
        axes[0].figure.tight_layout()
        return axes

    return explorer.explore(draw, dict(model=w.Dropdown(options=list(MODELS), value=model, description="model"),
                       network=w.Dropdown(options=list(NETWORKS), value=network, description="network"),
                       gpus=w.SelectionSlider(options=[2 ** k for k in range(2, 11)], value=gpus, description="GPUs",
                                              continuous_update=False),
                       method=w.Dropdown(options=list(METHODS), value=method, description="method")))
