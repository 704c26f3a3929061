"""Chapter 10, training large models: the runs, tables, figures and widget the notebook shows.

Every function runs the library (:mod:`commlab.parallel`) on small problems (threads, a few
ranks, the simulated clock) or asks its planner about real ones; nothing here is a result typed in.
"""
from __future__ import annotations

import threading

import matplotlib.pyplot as plt
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from ..arch import ring
from ..data import load
from ..models import build_model
from ..net.clock import Network
from ..net.link import LinkModel
from ..net.link import get_link as link
from ..parallel import planner
from ..parallel.configs import MODELS
from ..parallel.experts import ExpertParallelMoE, MoE
from ..parallel.group import Group
from ..parallel.pipeline import bubble_fraction, run_pipeline
from ..parallel.tensor import tp_bytes
from ..parallel.tensor_layer import ParallelTransformerLayer, sync_replicated_grads
from ..parallel.zero import ZeroExchange, zero_bytes, zero_memory
from ..runtime import launch
from ..sim import get_device
from ..train import Trainer
from . import explorer

MLP = dict(model="mlp", data="digits", batch_size=32, lr=0.1, momentum=0.9, seed=0, progress=False, eval_every=10,
           net="10GbE")
TOKENS = dict(model="transformer", data="tokens", batch_size=16, lr=0.05, seed=0, progress=False, eval_every=10,
              net="10GbE")
_LOCK = threading.Lock()  # threads share torch's RNG: build the shared inputs one rank at a time


# ----------------------------------------------------------------------------- ZeRO
def zero_runs(workers: int = 4, steps: int = 20) -> tuple[dict, pd.DataFrame]:
    """BSP (ring) and ZeRO 1-3 on the digits MLP: the runs and a table of loss gap, bytes, time."""
    runs = {"BSP (ring)": Trainer(workers=workers, arch="ring", **MLP).fit(steps)}
    for stage in (1, 2, 3):
        runs[f"ZeRO-{stage}"] = Trainer(workers=workers, arch=f"zero(stage={stage})", **MLP).fit(steps)
    psi = sum(p.numel() for p in build_model("mlp", load("digits")).parameters())
    base = runs["BSP (ring)"]
    rows = {}
    for label, h in runs.items():
        stage = 0 if label.startswith("BSP") else int(label[-1])
        rows[label] = {"max |loss - BSP|": max(abs(a - b) for a, b in zip(h.loss, base.loss)),
                       "bytes/rank/step": sum(h.bytes_sent[-1]) / workers,
                       "formula": zero_bytes(psi, workers, max(stage, 1)),
                       "ms/step (10GbE)": 1e3 * h.sim_time[-1] / steps}
    return runs, pd.DataFrame(rows).T


def _memory_rank(comm, stage, optimizer, precision="fp32"):
    ds = load("digits")
    with _LOCK:
        torch.manual_seed(0)
        model = build_model("mlp", ds)
    g = torch.Generator().manual_seed(comm.rank)
    settings = dict(lr=0.01, momentum=0.0, weight_decay=0.0)
    if stage == 0:  # plain data parallelism: the whole model, gradient and optimizer on every rank
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
    else:
        ex = ZeroExchange(comm, model, settings, stage, optimizer, precision)
    for _ in range(2):
        idx = torch.randint(0, len(ds.y_train), (16,), generator=g)
        if stage:
            ex.begin(0.0)
        model.zero_grad()
        F.cross_entropy(model(ds.x_train[idx]), ds.y_train[idx]).backward()
        ex.step(model, None) if stage else opt.step()
    if stage:
        return ex.memory()
    size = lambda ts: sum(t.numel() * t.element_size() for t in ts)  # noqa: E731
    state = size(v for s in opt.state.values() for v in s.values() if v.dim() > 0)
    params, grads = size(model.parameters()), size(p.grad for p in model.parameters())
    return {"params": params, "grads": grads, "optimizer": state, "total": params + grads + state}


def zero_memory_table(workers: int = 5) -> pd.DataFrame:
    """Bytes per rank measured against ZeRO's formula, stages 0-3: fp32 Adam (A = 4, K = 8) and the
    paper's mixed-precision Adam (A = 2, K = 12; stage 0 in bf16 is not a mode of the library)."""
    psi = sum(p.numel() for p in build_model("mlp", load("digits")).parameters())
    rows = {}
    for stage in range(4):
        fp32 = launch(_memory_rank, workers, args=(stage, "adam"))[0]["total"]
        mixed = launch(_memory_rank, workers, args=(stage, "adam", "mixed"))[0]["total"] if stage else float("nan")
        rows[f"stage {stage}"] = {
            "fp32 measured": fp32, "fp32 formula": zero_memory(psi, workers, stage, "adam", "fp32")["total"],
            "mixed measured": mixed, "mixed formula": zero_memory(psi, workers, stage, "adam", "mixed")["total"]}
    return pd.DataFrame(rows).T


def figure_1_table() -> pd.DataFrame:
    """ZeRO's Figure 1 (7.5B parameters, 64 GPUs, mixed-precision Adam): ours beside the paper's."""
    paper = planner.PUBLISHED["zero-figure-1"]["gb"]
    return pd.DataFrame({"ours (GB)": [zero_memory(7.5e9, 64, s)["total"] / 1e9 for s in range(4)],
                         "paper (GB)": list(paper)}, index=[f"stage {s}" for s in range(4)])


# ----------------------------------------------------------------------------- tensor parallelism
def _tp_rank(comm, sp):
    with _LOCK:
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(32, 4, 128, 0.0, batch_first=True, norm_first=True)
        x = torch.randn(2, 8, 32)
    ref = layer(x)
    group = Group(comm, range(comm.world_size))
    split = ParallelTransformerLayer.from_layer(group, layer, sequence_parallel=sp)
    mine = x.chunk(group.size, dim=1)[group.index] if sp else x
    want = ref.chunk(group.size, dim=1)[group.index] if sp else ref
    before = comm.stats.bytes_sent
    out = split(mine)
    out.sum().backward()
    layer_bytes = comm.stats.bytes_sent - before
    sync_replicated_grads(split, group)  # sequence parallelism: the LayerNorms' partial gradients
    return (out - want).abs().max().item(), layer_bytes, comm.stats.bytes_sent - before - layer_bytes


def tp_table(sizes=(2, 4)) -> pd.DataFrame:
    """One layer (h = 32, 4 heads) split over t ranks: error against the unsplit layer, bytes."""
    rows = {}
    for t in sizes:
        for sp in (False, True):
            res = launch(_tp_rank, t, args=(sp,))
            form = tp_bytes(2, 8, 32, t, sequence_parallel=sp)
            rows[f"t={t}" + (", sequence-parallel" if sp else "")] = {
                "max |error|": max(r[0] for r in res), "bytes/rank": res[0][1],
                "formula": form["forward"] + form["backward"], "+ replicated grads": res[0][2]}
    return pd.DataFrame(rows).T


def tp_link_table(b: int = 1, s: int = 2048, h: int = 12288, t: int = 8,
                  links=("NVLink3-A100", "200GbHDR-IB", "100GbIB", "10GbE"), efficiency=planner.EFFICIENCY):
    """GPT-3's layer (h = 12288) split over t GPUs: its four all-reduces of b s h bf16 values per
    forward and backward against its compute on an A100 at ``efficiency`` of peak."""
    n = b * s * h * 2
    compute = 3 * (24 * b * s * h * h + 4 * b * s * s * h) / t / (get_device("a100").flops * efficiency)
    rows = {name: {"all-reduces (ms)": 1e3 * 4 * ring.cost(n, t, link(name)), "compute (ms)": 1e3 * compute}
            for name in links}
    df = pd.DataFrame(rows).T
    df["comm / compute"] = df["all-reduces (ms)"] / df["compute (ms)"]
    return df


# ----------------------------------------------------------------------------- pipelines
def _pipe_rank(comm, schedule, m, tf, tb):
    with _LOCK:
        torch.manual_seed(0)
        stages = [nn.Linear(4, 4) for _ in range(comm.world_size)]
        x, y = torch.randn(4 * m, 4), torch.randn(4 * m, 4)
    timeline = []
    run_pipeline(Group(comm, range(comm.world_size)), stages[comm.rank], schedule, m, inputs=list(x.chunk(m)),
                 targets=list(y.chunk(m)), loss_fn=F.mse_loss, compute=lambda op, i: tf if op == "F" else tb,
                 timeline=timeline)
    return timeline


def pipeline_timeline(schedule: str, p: int = 4, m: int = 8, tf: float = 1.0, tb: float = 2.0) -> list:
    """(stage, op, micro-batch, start, end) of every op, on an ideal link, forward tf, backward tb."""
    res = launch(_pipe_rank, p, net=Network(LinkModel(0.0, 0.0), flops=None), args=(schedule, m, tf, tb))
    return [op for r in res for op in r]


def measured_bubble(timeline) -> float:
    """The idle share of a pipeline timeline: 1 - (busy time per stage) / (the last op's end)."""
    total = max(e for *_, e in timeline)
    stages = {s for s, *_ in timeline}
    busy = sum(e - b for *_, b, e in timeline) / len(stages)
    return 1 - busy / total


def bubble_table(p: int = 4, ms=(1, 2, 4, 8, 16)) -> pd.DataFrame:
    """Measured bubble of GPipe and 1F1B on p stages for each m, beside (p-1)/(m+p-1)."""
    rows = {m: {"measured, GPipe": measured_bubble(pipeline_timeline("gpipe", p, m)),
                "measured, 1F1B": measured_bubble(pipeline_timeline("1f1b", p, m)),
                "(p-1)/(m+p-1)": bubble_fraction(p, m)} for m in ms}
    return pd.DataFrame(rows).T.rename_axis("m")


def timeline_figure(timelines: dict):
    """One row of boxes per stage and schedule: forward light, backward dark, numbered; one panel
    per schedule, stacked, 6.8 inches wide (the book's column)."""
    fig, axes = plt.subplots(len(timelines), 1, figsize=(6.8, 0.6 + 2.0 * len(timelines)), sharex=True,
                             squeeze=False)
    axes = axes[:, 0]
    for ax, (name, tl) in zip(axes, timelines.items()):
        for s, op, i, b, e in tl:
            ax.broken_barh([(b, e - b)], (s - 0.4, 0.8), color="#9ecae1" if op == "F" else "#3182bd",
                           edgecolor="white")
            ax.text((b + e) / 2, s, str(i), ha="center", va="center", fontsize=8,
                    color="black" if op == "F" else "white")
        ax.set_yticks(range(1 + max(s for s, *_ in tl)))
        ax.set_ylabel("stage")
        ax.invert_yaxis()
        ax.set_title(f"{name}: bubble {measured_bubble(tl):.0%} (light: forward, dark: backward)", fontsize=10)
    axes[-1].set_xlabel("time (units of one forward)")
    return axes


# ----------------------------------------------------------------------------- experts
def _moe_rank(comm, experts, cf):
    with _LOCK:
        torch.manual_seed(0)
        moe = MoE(16, 32, experts, top_k=2, capacity_factor=cf)
        x = torch.randn(64, 16, requires_grad=True)  # as inside a model: backward crosses the dispatch too
    ep = ExpertParallelMoE.from_moe(Group(comm, range(comm.world_size)), moe)
    dropped = moe.route(x)[5]
    y, aux = ep(x)
    (y.sum() + aux).backward()
    return comm.stats.bytes_sent, ep.bytes_per_step(64, 16), dropped / (2 * 64)


def moe_table(world: int = 4, experts: int = 8, factors=(0.5, 1.0, 1.25, 2.0)) -> pd.DataFrame:
    """Top-2 MoE, 64 tokens per rank: bytes per rank (measured, formula) and dropped assignments."""
    rows = {}
    for cf in factors:
        r = launch(_moe_rank, world, args=(experts, cf))
        rows[cf] = {"bytes/rank": r[0][0], "formula": r[0][1], "dropped": sum(x[2] for x in r) / world}
    return pd.DataFrame(rows).T.rename_axis("capacity factor")


# ----------------------------------------------------------------------------- 3D and the planner
def threed_runs(steps: int = 30) -> dict:
    """Histories of BSP on 2 workers and of dp=2, tp=2, pp=2 on 8, on the tiny transformer."""
    return {"BSP, 2 workers": Trainer(workers=2, arch="ring", **TOKENS).fit(steps),
            "dp=2, tp=2, pp=2": Trainer(workers=8, parallel="dp=2,tp=2,pp=2,micro_batches=4", **TOKENS).fit(steps)}


def layouts_shown(layouts: pd.DataFrame) -> pd.DataFrame:
    """The planner's candidates (:func:`commlab.parallel.planner.candidates`) as the chapter shows
    them, narrow enough for the page: the layout "t x p x d", ZeRO stage, micro-batches, GB per
    GPU, seconds per step and TFLOP/s per GPU (fit, bytes per link class and % of peak left out)."""
    return pd.DataFrame({"ZeRO": layouts.zero, "m": layouts.m, "GB/GPU": layouts.memory_gb.round(1),
                         "s/step": layouts.step_s.round(3), "TFLOP/s/GPU": layouts.tflops_per_gpu.round(1)}).set_axis(
        [f"{t}×{p}×{d}" for t, p, d in zip(layouts.tp, layouts.pp, layouts.dp)]).rename_axis("t×p×d")


def megatron_table(efficiency: float = planner.EFFICIENCY) -> pd.DataFrame:
    """Megatron-LM's published runs (Narayanan et al. SC'21) beside the planner's TFLOP/s and peak."""
    rows = {}
    for name in ("megatron-145b", "megatron-175b", "megatron-1t"):
        pub, ours = planner.PUBLISHED[name], planner.published_plan(name, efficiency=efficiency)
        rows[pub["model"]] = {"GPUs": pub["gpus"], "tp x pp x dp": f"{pub['tp']} x {pub['pp']} x {pub['dp']}",
                              "paper TFLOP/s/GPU": pub["tflops_per_gpu"],
                              "ours": round(ours.flops_per_gpu / 1e12, 1), "paper % peak": pub["peak_pct"],
                              "ours %": round(100 * ours.peak_fraction, 1), "paper PFLOP/s": pub["total_pflops"],
                              "ours PFLOP/s": round(ours.total_flops / 1e15, 1)}
    return pd.DataFrame(rows).T


def plan_figure(p, ax=None):
    """Memory per GPU and step time of a Plan, as two stacked horizontal bars, one above the other."""
    axes = ax if ax is not None else plt.subplots(2, 1, figsize=(6.8, 3.4))[1]
    for a, parts, scale, unit in ((axes[0], p.memory, 1e9, "GB per GPU"), (axes[1], p.time, 1, "seconds per step")):
        left = 0.0
        for k, v in parts.items():
            if k != "total":
                a.barh([0], [v / scale], left=left, label=k)
                left += v / scale
        a.set_yticks([])
        a.set_xlabel(unit)
        a.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.1), frameon=False)
    axes[0].axvline(80, color="k", ls=":", lw=0.8)
    axes[0].set_title(f"{p.model}: tp={p.tp} pp={p.pp} dp={p.dp} ZeRO-{p.zero}" + ("" if p.fits else " (does not fit)")
                      + " (dotted: 80 GB)", fontsize=10)
    axes[1].set_title(f"{p.flops_per_gpu / 1e12:.0f} TFLOP/s per GPU ({p.peak_fraction:.0%} of peak)", fontsize=10)
    return axes


def layout_explorer(model="gpt3-175b", gpus=1024, tp=8, pp=16, zero=1, batch=1536):
    """The widget: model, GPUs, tp, pp, ZeRO stage -> the planner's memory and time bars."""
    import ipywidgets as w

    def draw(model, gpus, tp, pp, zero):  # a layout the planner refuses shows its message
        axes = plan_figure(planner.plan(model, gpus, tp, pp, gpus // (tp * pp), zero, batch=batch))
        plt.tight_layout()
        return axes

    return explorer.explore(draw, dict(model=w.Dropdown(options=list(MODELS), value=model),
                       gpus=w.SelectionSlider(options=[512, 1024, 1536, 3072], value=gpus, continuous_update=False),
                       tp=w.SelectionSlider(options=[1, 2, 4, 8], value=tp, continuous_update=False),
                       pp=w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64], value=pp, continuous_update=False),
                       zero=w.SelectionSlider(options=[0, 1, 2, 3], value=zero, continuous_update=False)),
                        refused=(ValueError, ZeroDivisionError))
