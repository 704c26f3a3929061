"""Chapter 12, putting it together: the tables, runs and figures the notebook shows.

The convergence rates of the literature beside the penalties the library measured
(:mod:`commlab.advisor.penalties`), the whole taxonomy on one figure (the advisor's best
configuration per dimension on three networks), and the advisor's ranking beside real runs of
the configurations a laptop can run. Nothing here is a result typed in.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd

from ..advisor import advise, penalties
from ..data import load
from ..models import build_model
from ..sim import Cluster, Device, profile
from ..train import Trainer

# The rates (non-convex, smooth, bounded variance sigma^2; N workers, T rounds), and what each
# predicts for the rounds to a fixed small error relative to BSP once T is large.
RATES = {
    "bsp": ("O(1/sqrt(NT))", "smooth, unbiased gradients, variance sigma^2", "Dekel et al. 2012; Ghadimi and Lan 2013", "1"),
    "local_sgd(period=4)": ("O(1/sqrt(NT)) + O(N H / T)", "as BSP; H local steps between averages",
                            "Stich 2019; Lin et al. 2020", "1 (the H term fades)"),
    "local_sgd(period=16)": ("O(1/sqrt(NT)) + O(N H / T)", "as above, H = 16", "Stich 2019; Lin et al. 2020",
                             "1 (the H term fades)"),
    "dpsgd": ("O(1/sqrt(NT)) + O(N / (rho^2 T))", "doubly stochastic mixing, spectral gap rho",
              "Lian et al. 2017", "1 (the rho term fades)"),
    "fp16": ("as BSP", "rounding error far below the gradient noise", "Micikevicius et al. 2018", "1"),
    "qsgd(levels=16)": ("O(sqrt((1 + omega) / (NT)))", "unbiased, variance blown up by 1 + omega",
                        "Alistarh et al. 2017", "up to 1 + omega/N"),
    "terngrad": ("O(sqrt((1 + omega) / (NT)))", "unbiased ternary, bounded variance", "Wen et al. 2017",
                 "up to 1 + omega/N"),
    "topk(0.01)": ("no guarantee", "biased, no error feedback", "Lin et al. 2018 (with corrections)", "may not converge"),
    "topk(0.01)+ef": ("O(1/sqrt(NT)) + O(1/(delta^2 T))", "delta-contraction, error feedback",
                      "Stich et al. 2018; Karimireddy et al. 2019", "1 (the delta term fades)"),
    "signsgd+ef": ("O(1/sqrt(T)) + O(1/(delta^2 T))", "scaled sign with error feedback", "Karimireddy et al. 2019",
                   "1 (the delta term fades)"),
}


def rates_table() -> pd.DataFrame:
    """The rates beside the measured penalties of the shipped table."""
    measured = penalties.load()
    rows = {o: {"rate": r[0], "assumptions": r[1], "source": r[2], "predicts": r[3],
                "rounds (measured)": measured.loc[o, "rounds"], "penalty (measured)": measured.loc[o, "penalty"]}
            for o, r in RATES.items()}
    return pd.DataFrame(rows).T.rename_axis("option")


# ----------------------------------------------------------------------------- the taxonomy
NETWORKS = {"NVLink": "NVLink", "100Gb IB": "100GbIB", "1Gb WAN": "1GbWAN"}
DIMENSIONS = {
    "BSP, ring": lambda t: (t["sync"] == "bsp") & (t["arch"] == "allreduce") & (t["compress"] == "none")
    & (t["schedule"] == "none"),
    "synchronization": lambda t: (t["compress"] == "none") & (t["schedule"] == "none") & (t["arch"] != "ps"),
    "architecture": lambda t: (t["sync"] == "bsp") & (t["compress"] == "none") & (t["schedule"] == "none"),
    "compression": lambda t: (t["sync"] == "bsp") & (t["arch"] == "allreduce") & (t["schedule"] == "none"),
    "scheduling": lambda t: (t["sync"] == "bsp") & (t["arch"] == "allreduce") & (t["compress"] == "none"),
    "all combined": lambda t: t["time_s"] > 0,
}


def taxonomy(model: str = "resnet50", nodes: int = 8, gpus_per_node: int = 4, target: int = 5000) -> pd.DataFrame:
    """Hours to the target of the best configuration of each dimension, per network, and which."""
    hours, which = {}, {}
    for label, net in NETWORKS.items():
        t = advise(model, Cluster(nodes, gpus_per_node, inter=net), target=target)
        for dim, keep in DIMENSIONS.items():
            best = t[keep(t)].iloc[0]
            hours[(label, dim)] = best["time_s"] / 3600
            which[(label, dim)] = " / ".join(str(best[k]) for k in ("sync", "arch", "compress", "schedule"))
    return pd.DataFrame({"hours": hours, "configuration": which}).rename_axis(["network", "dimension"])


def taxonomy_figure(table: pd.DataFrame, ax=None):
    ax = ax or plt.subplots(figsize=(8, 3.4))[1]
    wide = table["hours"].unstack("dimension")[list(DIMENSIONS)]
    wide.loc[list(NETWORKS)].plot.bar(ax=ax, rot=0, logy=True)
    ax.set_ylabel("hours to the target (log)")
    ax.set_xlabel("")
    ax.legend(fontsize=8, ncol=3)
    return ax


# ----------------------------------------------------------------------------- the advisor beside real runs
TRAINER = dict(penalties.SETUP, eval_every=5)
RUNNABLE = {  # (sync, arch in the advisor) -> the Trainer's options
    ("bsp", "allreduce", "none"): dict(arch="ring"),
    ("bsp", "allreduce", "fp16"): dict(arch="ring", compress="fp16"),
    ("local_sgd(period=4)", "allreduce", "none"): dict(sync="local_sgd(period=4)", arch="ring"),
    ("local_sgd(period=16)", "allreduce", "none"): dict(sync="local_sgd(period=16)", arch="ring"),
    ("dpsgd", "gossip(ring)", "none"): dict(sync="dpsgd"),
}


def mlp_profile():
    """The digits MLP's per-layer profile at the Trainer's clock (1e12 FLOP/s)."""
    ds = load(TRAINER["data"], seed=0)
    model = build_model(TRAINER["model"], ds)
    return profile(model, example_input=ds.x_train[:TRAINER["batch_size"]], device=Device("trainer clock", 1e12))


def agreement(net: str = "10GbE", steps: int = 120, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """The advisor's predicted seconds to the target for :data:`RUNNABLE` on ``net``, beside real
    runs on threads with the simulated clock (seconds at the first round with accuracy >= 0.9)."""
    workers = TRAINER["workers"]
    table = penalties.load()
    ranked = advise(mlp_profile(), Cluster.flat(workers, net), target=int(round(table.loc["bsp", "rounds"])))
    rows, histories = {}, {}
    for key, options in RUNNABLE.items():
        sync, arch, comp = key
        row = ranked[(ranked["sync"] == sync) & (ranked["arch"] == arch) & (ranked["compress"] == comp)
                     & (ranked["schedule"] == "none")].iloc[0]
        h = Trainer(seed=seed, net=net, **TRAINER, **options).fit(steps)
        rounds = penalties.rounds_to_target(h, workers, TRAINER["batch_size"])
        measured = h.sim_time[int(rounds) - 1] if not math.isnan(rounds) else math.nan
        label = sync if comp == "none" else f"{sync} + {comp}"
        histories[label] = h
        rows[label] = {"predicted s": row["time_s"], "measured s": measured, "predicted rounds": row["rounds"],
                       "measured rounds": rounds}
    out = pd.DataFrame(rows).T
    out["predicted rank"] = out["predicted s"].rank(method="min").astype(int)
    out["measured rank"] = out["measured s"].rank(method="min").astype(int)
    return out.sort_values("predicted s"), histories


def curves_figure(histories: dict, ax=None):
    ax = ax or plt.subplots(figsize=(7, 3))[1]
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
        for model, measured in models.items():
            t = advise(model, cluster, target=1)
            lossless = pd.Series([(a, s) in _METHOD for a, s in zip(t["arch"], t["schedule"])], index=t.index)
            seven = t[(t["sync"] == "bsp") & (t["compress"] == "none") & lossless]
            pick = _METHOD[(seven.iloc[0]["arch"], seven.iloc[0]["schedule"])]
            best = max(measured, key=measured.get)
            rows[(net, model)] = {"advisor": pick, "measured best": best,
                                  "pick's measured throughput / best": measured[pick] / measured[best]}
    return pd.DataFrame(rows).T.rename_axis(["network", "model"])
