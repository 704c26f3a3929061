"""The simulator against the quantitative survey's measured grid.

Shi, Tang, Chu, Liu, Wang, Li ("A Quantitative Survey of Communication Optimizations in
Distributed Deep Learning", IEEE Network 35(3), 2021) published every throughput they measured
(HKBU-HPML/ddl-benchmarks, ``results/2020-05-29/README.md``, commit 30de09b): ResNet-50, BERT-Base
and BERT-Large, seven methods, 4 to 32 RTX 2080 Ti GPUs in nodes of four, on 100Gb InfiniBand
(RDMA), 10GbE and 100GbE (TCP/IP), and the one-GPU throughputs. ``survey_grid.csv`` beside this
module holds that table unchanged (samples/s and the spread the authors report).

:func:`testbed` builds the survey's cluster from the project's own constants, none fitted to
these speedups: links from the survey's point-to-point measurements and one bare all-reduce inside
a node (:mod:`commlab.net.measured`), NCCL's choice of ring or tree (:mod:`commlab.sim.closed_forms`),
BytePS as the survey deployed it, and the frameworks' cost per operation, each from one cell
(:mod:`commlab.sim.frameworks`). :func:`compare` predicts every cell; :func:`summary` gives, per
network, the median relative error, how many (model, network, GPUs) groups have their measured
best method within 5% of the one the simulator ranks first, and the mean Spearman correlation of
the seven methods' order, with the calibration cells left out.
"""
from __future__ import annotations

import os

import pandas as pd

from .cluster import Cluster
from .frameworks import CALIBRATION
from .iteration import iteration
from ..net.measured import SURVEY_NODE_CELL

PATH = os.path.join(os.path.dirname(__file__), "survey_grid.csv")
NETWORKS = {"100GbIB": "100GbIB-survey", "10GbE": "10GbE-survey", "100GbE": "100GbE-survey"}
GPUS_PER_NODE = 4


def testbed(gpus: int, network: str = "100GbIB") -> Cluster:
    """The survey's cluster: nodes of 4 GPUs on PCIe 3.0 (PCIe3-survey), ``network`` between
    them (a key of :data:`NETWORKS` or any link), NCCL's ring or tree per message."""
    return Cluster(max(1, gpus // GPUS_PER_NODE), min(GPUS_PER_NODE, gpus), intra="PCIe3-survey",
                   inter=NETWORKS.get(network, network), allreduce="nccl")


def grid() -> pd.DataFrame:
    """The measured table: model, batch, network, method, gpus, samples_per_s, spread; the one-GPU
    rows have method "single" and no network."""
    return pd.read_csv(PATH)


def _calibration(row) -> bool:
    cells = [SURVEY_NODE_CELL, *CALIBRATION.values()]
    return any(row.model == c["model"] and row.method == c["method"] and row.gpus == c["gpus"] for c in cells)


def compare(**iteration_kw) -> pd.DataFrame:
    """One row per measured cell: network, model, gpus, method, measured and predicted speedup
    over one GPU, error (predicted / measured - 1) and calibration (the cell gave a constant)."""
    table = grid()
    single = table[table.method == "single"].set_index("model").samples_per_s
    rows = []
    for r in table[table.method != "single"].itertuples():
        it = iteration(r.model, testbed(r.gpus, r.network), method=r.method, **iteration_kw)
        measured = r.samples_per_s / single[r.model]
        rows.append(dict(network=r.network, model=r.model, gpus=r.gpus, method=r.method, measured=measured,
                         predicted=it.speedup, error=it.speedup / measured - 1, calibration=_calibration(r)))
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per network and overall: cells judged, median |error|, groups whose measured best method is
    within 5% of the measured speedup of the predicted best, and the mean Spearman correlation
    of the methods' measured and predicted order (calibration cells left out of the errors)."""
    rows = []
    for net, t in [*table.groupby("network", sort=False), ("all", table)]:
        judged = t[~t.calibration]
        best, rho = 0, []
        groups = list(t.groupby(["network", "model", "gpus"], sort=False))
        for _, g in groups:
            pick = g.loc[g.predicted.idxmax()]
            best += bool(pick.measured >= 0.95 * g.measured.max())
            rho.append(g.measured.rank().corr(g.predicted.rank()))
        rows.append(dict(network=net, cells=len(judged), median_error=judged.error.abs().median(),
                         best_within_5pct=best, groups=len(groups), spearman=sum(rho) / len(rho)))
    return pd.DataFrame(rows).set_index("network")


def measured() -> pd.DataFrame:
    """The measured speedups over one GPU in long form: network, model, gpus, method, speedup."""
    return compare().rename(columns={"measured": "speedup"})[["network", "model", "gpus", "method", "speedup"]]


BSP_OF = {"wfbp_a2a": "bsp_a2a", "mg_wfbp": "bsp_a2a", "bytescheduler_a2a": "bsp_a2a", "wfbp_ps": "bsp_ps",
          "bytescheduler_ps": "bsp_ps"}
PAIRS = (("bsp_a2a", "bsp_ps"), ("wfbp_a2a", "wfbp_ps"), ("bytescheduler_a2a", "bytescheduler_ps"))


def verdicts(table: pd.DataFrame) -> dict:
    """The survey's questions asked of a speedup table in long form (measured or simulated): for
    each overlapping method, the (network, model, gpus) cases where it is slower than BSP on its
    architecture (``loses``); over the three all-reduce/PS method pairs, the cases where all-reduce
    (``a2a_wins``) or the parameter server (``ps_wins``) is ahead by more than 1%."""
    wide = table.pivot_table(index=["network", "model", "gpus"], columns="method", values="speedup")
    loses = {m: [c for c, r in wide.iterrows() if r[m] < r[b] - 1e-9] for m, b in BSP_OF.items()}
    a2a = [(*c, a) for c, r in wide.iterrows() for a, p in PAIRS if r[a] > 1.01 * r[p]]
    ps = [(*c, a) for c, r in wide.iterrows() for a, p in PAIRS if r[p] > 1.01 * r[a]]
    return dict(loses=loses, a2a_wins=a2a, ps_wins=ps, pairs=len(wide) * len(PAIRS), cases=len(wide))
