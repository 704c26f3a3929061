"""Chapter 12, putting it together: the tables, runs and figures the notebook shows.

The convergence rates of the literature beside the penalties the library measured
(:mod:`commlab.advisor.penalties`), the whole taxonomy on one figure (the advisor's best
configuration per dimension on three networks), and the advisor's ranking beside real runs of
the configurations a laptop can run. Nothing here is a result typed in.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter
import pandas as pd

from ..advisor import advise, horizon, penalties, trainer_archs
from ..data import load
from ..models import build_model
from ..sim import Cluster, Device, profile
from ..train import Trainer

# The rates (non-convex, smooth, bounded variance sigma^2; N workers, T rounds), and what each
# predicts for the rounds to a fixed small error relative to BSP once T is large. Notation of the
# book: delta the spectral gap of a gossip matrix; omega a compressor's contraction quality,
# E||C(x) - x||^2 <= (1 - omega) ||x||^2; theta an unbiased compressor's variance,
# E||C(x) - x||^2 <= theta ||x||^2 (book/notation.md).
RATES = {
    "bsp": ("O(1/sqrt(NT))", "smooth, unbiased gradients, variance sigma^2", "Dekel et al. 2012; Ghadimi and Lan 2013", "1"),
    "local_sgd(period=4)": ("O(1/sqrt(NT)) + O(N H / T)", "as BSP; H local steps between averages",
                            "Stich 2019; Lin et al. 2020", "1 (the H term fades)"),
    "local_sgd(period=16)": ("O(1/sqrt(NT)) + O(N H / T)", "as above, H = 16", "Stich 2019; Lin et al. 2020",
                             "1 (the H term fades)"),
    "dpsgd": ("O(1/sqrt(NT)) + O(N / (delta^2 T))", "doubly stochastic mixing, spectral gap delta",
              "Lian et al. 2017", "1 (the delta term fades)"),
    "fp16": ("as BSP", "rounding error far below the gradient noise", "Micikevicius et al. 2018", "1"),
    "qsgd(levels=16)": ("O(sqrt((1 + theta) / (NT)))", "unbiased, variance theta", "Alistarh et al. 2017",
                        "up to 1 + theta"),
    "terngrad": ("O(sqrt((1 + theta) / (NT)))", "unbiased ternary, variance theta", "Wen et al. 2017",
                 "up to 1 + theta"),
    "topk(0.01)": ("no guarantee", "biased, no error feedback", "Lin et al. 2018 (with corrections)", "may not converge"),
    "topk(0.01)+ef": ("O(1/sqrt(NT)) + O(1/(omega^2 T))", "contraction omega = k/D, error feedback",
                      "Stich et al. 2018; Karimireddy et al. 2019", "1 (the omega term fades)"),
    "signsgd+ef": ("O(1/sqrt(T)) + O(1/(omega^2 T))", "scaled sign with error feedback", "Karimireddy et al. 2019",
                   "1 (the omega term fades)"),
}


def rates_table() -> pd.DataFrame:
    """The rates beside the penalties of the shipped table: per problem, the penalty at the option's
    own tuned learning rate (with that rate), and the penalty the advisor ranks by."""
    measured, used = penalties.load(), horizon.for_ranking()
    rows = {}
    for o, r in RATES.items():
        row = {"rate": r[0], "assumptions": r[1], "source": r[2], "predicts": r[3]}
        for problem in penalties.PROBLEMS:
            m = measured.loc[(problem, o)]
            row[f"{problem} penalty"] = m["penalty"]
            row[f"{problem} lr"] = m["lr"]
        row["ranked by"] = used.loc[o, "penalty"]
        rows[o] = row
    return pd.DataFrame(rows).T.rename_axis("option").infer_objects()


def penalty_range(table: pd.DataFrame | None = None) -> tuple[float, float]:
    """The smallest and largest measured penalty of an option other than BSP that reached the
    target, over both problems."""
    t = penalties.load() if table is None else table
    t = t[t["reached"] & (t.index.get_level_values("option") != "bsp")]
    return float(t["penalty"].min()), float(t["penalty"].max())


def horizon_table() -> pd.DataFrame:
    """Penalties against the horizon: per option of the long problem (:mod:`commlab.advisor.horizon`),
    its penalty at each target of the ladder (NaN: missed), then its penalty on the two short problems."""
    long, short = horizon.load(), penalties.load()
    t = long["penalty"].unstack("target")
    t.columns = [f"digits-cnn to {c:g}" for c in t.columns]
    for problem in penalties.PROBLEMS:
        t[problem] = short.xs(problem, level="problem")["penalty"].reindex(t.index)
    return t.rename_axis("option")


def horizon_figure(ax=None):
    """Penalty against BSP's rounds to each target of the long problem (the horizon), one line per
    option; an option's line stops where it misses the target."""
    long = horizon.load()
    ax = ax or plt.subplots(figsize=(6.8, 3.6))[1]
    bsp = long.xs("bsp", level="option")["bsp_rounds"]
    for option in horizon.OPTIONS:
        if option == "bsp":
            continue
        pen = long.xs(option, level="option")["penalty"]
        ax.plot(bsp.values, pen.values, marker="o", label=option)
    for x, target in zip(bsp.values, bsp.index):
        ax.annotate(f"{target:g}", (x, 1.0), textcoords="offset points", xytext=(0, -12), ha="center", fontsize=9)
    ax.axhline(1.0, color="black", lw=1)
    ax.set_xlabel("BSP's rounds to the target (target accuracy below the line)")
    ax.set_ylabel("rounds / BSP's rounds")
    ax.set_ylim(0.8, None)
    ax.set_title("digits CNN, 8 workers: the penalty as the horizon grows", fontsize=10)
    ax.legend(fontsize=9, loc="lower center", bbox_to_anchor=(0.5, 0.1))
    return ax


# ----------------------------------------------------------------------------- the taxonomy
NETWORKS = {"NVLink": "NVLink", "100Gb IB": "100GbIB", "1Gb WAN": "1GbWAN"}


def _ring(t):
    return t["arch"] == "ring"


DIMENSIONS = {  # which rows may differ from BSP over a ring in that dimension (None: no compression, no schedule)
    "BSP, ring": lambda t: (t["sync"] == "bsp") & _ring(t) & t["compress"].isna() & t["schedule"].isna(),
    "synchronization": lambda t: t["compress"].isna() & t["schedule"].isna() & ~t["arch"].str.startswith("ps"),
    "architecture": lambda t: (t["sync"] == "bsp") & t["compress"].isna() & t["schedule"].isna(),
    "compression": lambda t: (t["sync"] == "bsp") & _ring(t) & t["schedule"].isna(),
    "scheduling": lambda t: (t["sync"] == "bsp") & _ring(t) & t["compress"].isna(),
    "all combined": lambda t: t["time_s"] > 0,
}


def configuration(row) -> str:
    """A row's Trainer specs in one string: sync / arch / compress / schedule."""
    return " / ".join(str(row[k]) for k in ("sync", "arch", "compress", "schedule"))


def taxonomy(model: str = "resnet50", nodes: int = 8, gpus_per_node: int = 4, target: int = 5000) -> pd.DataFrame:
    """Hours to the target of the best configuration of each dimension, per network, and which."""
    hours, which = {}, {}
    for label, net in NETWORKS.items():
        t = advise(model, Cluster(nodes, gpus_per_node, inter=net), target=target)
        for dim, keep in DIMENSIONS.items():
            best = t[keep(t)].iloc[0]
            hours[(label, dim)] = best["time_s"] / 3600
            which[(label, dim)] = configuration(best)
    return pd.DataFrame({"hours": hours, "configuration": which}).rename_axis(["network", "dimension"])


def taxonomy_figure(table: pd.DataFrame, ax=None):
    """Bars of hours per network and dimension, 6.8 inches wide (a 688-pixel web column at 100 dpi)."""
    ax = ax or plt.subplots(figsize=(6.8, 3.4))[1]
    wide = table["hours"].unstack("dimension")[list(DIMENSIONS)]
    wide.loc[list(NETWORKS)].plot.bar(ax=ax, rot=0, logy=True)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # 1, not 10^0
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}".strip("0.")[:1] in "25" else ""))
    ax.set_ylabel("hours to the target (log)")
    ax.set_xlabel("")
    ax.legend(fontsize=8, ncol=3)
    return ax


# ----------------------------------------------------------------------------- the advisor beside real runs
PROBLEM = "digits-mlp"
TRAINER = dict(penalties.COMMON, **penalties.PROBLEMS[PROBLEM]["trainer"])
CHECKED = (("bsp", "ring", None), ("bsp", "ring", "fp16"), ("local_sgd(period=4)", "ring", None),
           ("local_sgd(period=16)", "ring", None), ("dpsgd", "gossip(topology='ring')", None))


def mlp_profile():
    """The digits MLP's per-layer profile at the Trainer's clock (1e12 FLOP/s)."""
    ds = load(TRAINER["data"], seed=0)
    model = build_model(TRAINER["model"], ds)
    return profile(model, example_input=ds.x_train[:TRAINER["batch_size"]], device=Device("trainer clock", 1e12))


def agreement(net: str = "10GbE", seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """The advisor's predicted seconds to the target for the rows of :data:`CHECKED` on ``net``,
    beside real runs of those rows as printed (threads, the simulated clock, each option at its
    tuned learning rate): seconds at the first round that reaches the digits MLP's target."""
    workers, table = TRAINER["workers"], penalties.load().xs(PROBLEM, level="problem")
    target = penalties.PROBLEMS[PROBLEM]["target"]
    ranked = advise(mlp_profile(), Cluster.flat(workers, net), target=int(round(table.loc["bsp", "rounds"])))
    steps = int(table["max_rounds"].max())
    rows, histories = {}, {}
    for sync, arch, comp in CHECKED:
        same = ranked["compress"].isna() if comp is None else ranked["compress"] == comp
        row = ranked[(ranked["sync"] == sync) & (ranked["arch"] == arch) & same & ranked["schedule"].isna()].iloc[0]
        option = comp or sync
        run = dict(TRAINER, seed=seed, lr=float(table.loc[option, "lr"]), workers=int(row["workers"]),
                   **{k: row[k] for k in ("sync", "arch", "compress", "schedule")})
        h = Trainer(net=net, **run).fit(steps)
        rounds = penalties.rounds_to_target(h, workers, TRAINER["batch_size"], target)
        measured = h.sim_time[int(rounds) - 1] if not math.isnan(rounds) else math.nan
        label = sync if comp is None else f"{sync} + {comp}"
        histories[label] = h
        rows[label] = {"predicted s": row["time_s"], "measured s": measured, "predicted rounds": row["rounds"],
                       "measured rounds": rounds}
    out = pd.DataFrame(rows).T
    out["predicted rank"] = out["predicted s"].rank(method="min").astype(int)
    out["measured rank"] = out["measured s"].rank(method="min").astype(int)
    return out.sort_values("predicted s"), histories


def curves_figure(histories: dict, ax=None):
    """Training loss against simulated seconds, 6.8 inches wide."""
    ax = ax or plt.subplots(figsize=(6.8, 3))[1]
    for label, h in histories.items():
        ax.plot(h.sim_time, h.loss, label=label, lw=1)
    ax.set_xlabel("simulated seconds (10GbE)")
    ax.set_ylabel("training loss")
    ax.legend(fontsize=8)
    return ax


# ----------------------------------------------------------------------------- the survey's testbed
# Throughput (samples/s) at 32 GPUs (8 nodes of 4 RTX 2080 Ti), as measured by the quantitative
# survey's authors: HKBU-HPML/ddl-benchmarks, results/2020-05-29/README.md ("10GbE with TCP/IP" and
# "100GbIB with RDMA" rows; batch 64 for ResNet-50 and BERT-Base, 8 for BERT-Large).
SURVEY_32 = {
    "10GbE": {
        "resnet50": dict(bsp_a2a=4920.82, wfbp_a2a=5113.18, mg_wfbp=6883.60, bytescheduler_a2a=4754.26,
                         bsp_ps=4376.578, wfbp_ps=6945.39, bytescheduler_ps=6888.995),
        "bert-large": dict(bsp_a2a=105.10, wfbp_a2a=101.96, mg_wfbp=105.02, bytescheduler_a2a=108.80,
                           bsp_ps=117.957, wfbp_ps=118.36, bytescheduler_ps=116.79),
        "bert-base": dict(bsp_a2a=1926.64, wfbp_a2a=2013.38, mg_wfbp=1925.78, bytescheduler_a2a=2259.84,
                          bsp_ps=2028.02, wfbp_ps=2546.695, bytescheduler_ps=2523.845),
    },
    "100GbIB": {
        "resnet50": dict(bsp_a2a=7126.52, wfbp_a2a=7326.56, mg_wfbp=7876.46, bytescheduler_a2a=4766.38,
                         bsp_ps=6587.627, wfbp_ps=7977.785, bytescheduler_ps=7999.83),
        "bert-large": dict(bsp_a2a=375.22, wfbp_a2a=339.82, mg_wfbp=400.16, bytescheduler_a2a=326.40,
                           bsp_ps=355.69, wfbp_ps=344.022, bytescheduler_ps=349.933),
        "bert-base": dict(bsp_a2a=4184.38, wfbp_a2a=4098.68, mg_wfbp=4940.08, bytescheduler_a2a=4521.26,
                          bsp_ps=4162.205, wfbp_ps=4899.632, bytescheduler_ps=4783.965),
    },
}
SURVEY_LINKS = {"100GbIB": "100GbIB-survey", "10GbE": "10GbE-mgwfbp"}
_METHOD = {("allreduce", "none"): "bsp_a2a", ("allreduce", "wfbp"): "wfbp_a2a", ("allreduce", "mg_wfbp"): "mg_wfbp",
           ("allreduce", "bytescheduler"): "bytescheduler_a2a", ("ps", "none"): "bsp_ps", ("ps", "wfbp"): "wfbp_ps",
           ("ps", "bytescheduler"): "bytescheduler_ps"}


def survey_check() -> pd.DataFrame:
    """The advisor's pick among the survey's seven lossless methods on its testbed (32 GPUs),
    beside the method the authors measured fastest, and the measured throughput of our pick as a
    share of theirs."""
    rows = {}
    for net, models in SURVEY_32.items():
        cluster = Cluster(8, 4, intra="PCIe3-mgwfbp", inter=SURVEY_LINKS[net])
        sim_arch = {v: k for k, v in trainer_archs(cluster).items()}  # the Trainer's spec -> the simulator's
        for model, measured in models.items():
            t = advise(model, cluster, target=1)
            method = pd.Series([_METHOD.get((sim_arch.get(a), s or "none")) for a, s in zip(t["arch"], t["schedule"])],
                               index=t.index)
            seven = method[(t["sync"] == "bsp") & t["compress"].isna() & method.notna()]
            pick = seven.iloc[0]
            best = max(measured, key=measured.get)
            rows[(net, model)] = {"advisor": pick, "measured best": best,
                                  "pick's measured throughput / best": measured[pick] / measured[best]}
    return pd.DataFrame(rows).T.rename_axis(["network", "model"])


# The survey's testbed (Shi et al. 2021): 8 nodes of 4 GPUs, PCIe 3.0 inside a node, and one of
# three networks between nodes (links of commlab.net.measured calibrated from the survey).
TESTBED = {"100Gb IB": "100GbIB-survey", "10GbE": "10GbE-survey", "100GbE": "100GbE-survey"}


def first_choices(models=("resnet50", "bert-base", "bert-large"), target: int = 5000) -> pd.DataFrame:
    """The advisor's first choice among every configuration it ranks, per model and network of the
    survey's testbed, with the penalty it ranked by and the hours to ``target`` rounds."""
    rows = {}
    for net, link in TESTBED.items():
        cluster = Cluster(8, 4, intra="PCIe3-survey", inter=link)
        for model in models:
            t = advise(model, cluster, target=target)
            first, bsp = t.iloc[0], t[DIMENSIONS["BSP, ring"](t)].iloc[0]
            rows[(net, model)] = {"first choice": configuration(first), "penalty": first["penalty"],
                                  "hours": first["time_s"] / 3600, "BSP, ring hours": bsp["time_s"] / 3600}
    return pd.DataFrame(rows).T.rename_axis(["network", "model"]).infer_objects()
