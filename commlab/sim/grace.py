"""The compression model against GRACE's measured grid: ResNet-50 on 8 V100s at 1, 10 and 25 Gb/s.

Xu et al. ("GRACE: A Compressed Communication Framework for Distributed Machine Learning", ICDCS
2021) released the throughputs they measured (sands-lab/grace-data). ``grace_resnet50_8workers.json``
beside this module holds the ResNet-50 runs on 8 workers and the one-worker run, unchanged:
TensorFlow's tf_cnn_benchmarks with Horovod over MPI (Open MPI over TCP), one V100 per node,
Ethernet limited to 1, 10 or 25 Gb/s, each compressor with and without error feedback, one run
per configuration (a few configurations have several, which the file does not tell apart; their
median is taken here). The rest of GRACE's release judges the model and is not used.

:func:`compare` predicts every cell with :func:`commlab.sim.iteration`, from the project's own
constants and this grid's **one-worker run only** (409.45 images/s at batch 64 sets the V100's
step; nothing multi-worker enters): 8 nodes of one V100, TCP at the cell's rate
(:func:`commlab.net.protocols.tcp`), ``framework="horovod-mpi"`` as GRACE's environment builds it
(Horovod 0.18.2 with GPU operations over CUDA-aware Open MPI: each tensor compressed on its own,
Horovod's cost per operation and its cycle, every collective staged through host memory by Open
MPI: :mod:`commlab.sim.data_path`; ``framework="horovod-nccl"`` gives the same model without the
staging), each compressor as :data:`SPECS` maps GRACE's
method to ours ("+ef" where GRACE ran with its memory and ours has none of its own), its
arithmetic timed as GRACE's TensorFlow operations, counted from its code
(:class:`commlab.sim.grace_costs.GraceCosts`, :data:`GRACE`). GRACE's methods without a
counterpart here (:data:`UNMATCHED`) are left out, and said so.

**What GRACE's code sends** (:data:`SPECS`). The mapping follows GRACE's TensorFlow compressors
(sands-lab/grace, ``grace_dl/tensorflow/compressor``), not this library's defaults:

* signSGD, signum and EF-signSGD send ``tensor >= 0`` as a bool and 1-bit SGD ``tensor < 0``,
  TernGrad an int8 and QSGD (``quantum_num`` 127) an int8 per coordinate: ``coding="bytes"``, 8
  bits where ours pack 1 or a few;
* PowerSGD runs at rank 1 (GRACE's ``compress_rank``) on ``tf.reshape(tensor, [shape[0], -1])``,
  and TensorFlow holds a conv kernel as [kh, kw, cin, cout]: a 3x3 kernel becomes a 3-row matrix
  and a 1x1 kernel a single row, so "rank 1" sends a third of a 3x3 kernel and all of a 1x1
  (``layout="tensorflow"``): ResNet-50's 102 MB become about 64 MB, not 1 MB;
* natural compression sends 8 bits where ours send 9, and 1-bit SGD's means are per tensor where
  ours are per 512 values: left as they are, differences of 1/9 and 1/64 of the bytes.

:data:`LIBRARY_SPECS` maps the same methods to this library's compressors at their defaults, as
the model did before it read GRACE's code: ``compare(specs=grace.LIBRARY_SPECS)``.
:func:`summary` gives the median error per bandwidth and per family, how often the model is right
about whether a compressor is faster than none at that bandwidth, and the measured rank of the
compressor the model ranks first. :func:`uncompressed_rate` is the link rate the model would need
to reproduce an uncompressed run (about 1.8, 9.1 and 10 Gb/s at GRACE's 1, 10 and 25 Gb/s; compare
what MPI reached over TCP elsewhere, :mod:`commlab.net.mpi_tcp`): a diagnostic, never used to predict.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from functools import lru_cache

import pandas as pd

from ..compress import get
from ..net import protocols
from ..net.link import LinkModel
from .cluster import Cluster
from .devices import DEVICES, profile
from .grace_costs import GraceCosts
from .iteration import iteration

PATH = os.path.join(os.path.dirname(__file__), "grace_resnet50_8workers.json")
BATCH, WORKERS = 64, 8
# each GRACE method as GRACE's TensorFlow code sends it (sands-lab/grace, grace_dl/tensorflow/compressor):
# one byte per sign or level, PowerSGD at rank 1 on TensorFlow's layout of a kernel (module doc)
SPECS = {"topk": "topk({ratio})", "randomk": "randk({ratio})", "dgc": "dgc(ratio={ratio})",
         "qsgd": "qsgd(levels=127, coding='bytes')", "terngrad": "terngrad(coding='bytes')", "natural": "natural",
         "signsgd": "signsgd(coding='bytes')", "signum": "signum(coding='bytes')",
         "efsignsgd": "scaled_sign(coding='bytes')+ef", "onebit": "onebit(coding='bytes')",
         "powersgd": "powersgd(rank=1, layout='tensorflow')", "threshold": "threshold(0.01)"}
# the same methods as this library's compressors send them at their defaults: bits packed, PowerSGD's
# rank 2 on PyTorch's layout (what the model compared before it read GRACE's code)
LIBRARY_SPECS = {**SPECS, "qsgd": "qsgd", "terngrad": "terngrad", "signsgd": "signsgd", "signum": "signum",
                 "efsignsgd": "ef_signsgd", "onebit": "onebit", "powersgd": "powersgd"}
OWN_MEMORY = ("dgc", "efsignsgd", "powersgd")  # ours keeps its residual (or momentum) itself
GRACE = GraceCosts()  # timed on the profile's device: the V100
UNMATCHED = {"8bit": "8-bit quantization with its own codebook", "adaq": "adaptive quantization",
             "inceptionn": "INCEPTIONN's lossy float coding", "sketch": "count-sketch quantization"}
FAMILY = {"topk": "sparsification", "randomk": "sparsification", "dgc": "sparsification",
          "threshold": "sparsification", "qsgd": "quantization", "terngrad": "quantization",
          "natural": "quantization", "signsgd": "sign", "signum": "sign", "efsignsgd": "sign", "onebit": "sign",
          "powersgd": "low rank", "none": "none"}


@lru_cache(maxsize=None)
def _doc() -> dict:
    with open(PATH) as f:
        return json.load(f)


def about() -> dict:
    """The file's source, setting and what is held out, as written there."""
    return {k: _doc()[k] for k in ("source", "setting", "held_out")}


def grid() -> pd.DataFrame:
    """The 8-worker cells: gbits, method, ratio (None if n/a), ef (error feedback; None for
    "none"), images_per_s (the median of the cell's runs) and runs."""
    runs = pd.DataFrame(_doc()["runs"])
    runs = runs[runs.workers == WORKERS]
    runs = runs.assign(gbits=runs.bw.str.rstrip("g").astype(float),
                       ratio=runs.ratio.where(runs.ratio != "n/a").astype(float),
                       ef=runs.memory.map({"true": True, "false": False}))
    cells = runs.groupby(["gbits", "method", "ratio", "ef"], dropna=False, sort=True)
    return cells.throughput.agg(images_per_s="median", runs="size").reset_index()


def single() -> float:
    """The one-worker run's images per second (the V100's step at batch 64)."""
    return next(r["throughput"] for r in _doc()["runs"] if r["workers"] == 1)


def spec_of(method: str, ratio, ef, specs=None) -> tuple[str | None, str]:
    """(our compressor for GRACE's ``method`` by ``specs`` (default :data:`SPECS`), None for
    "none"; a note where it differs from GRACE's run); KeyError for :data:`UNMATCHED`."""
    if method == "none":
        return None, ""
    ratio = f"{ratio:g}" if ratio == ratio and ratio is not None else ""
    spec = (SPECS if specs is None else specs)[method].format(ratio=ratio)
    if ef is not True or method in OWN_MEMORY:
        return spec, ""
    try:
        get(spec + "+ef")
    except ValueError as e:  # a compressor that aggregates by its own protocol takes no wrapper
        return spec, f"error feedback not modelled ({e})"
    return spec + "+ef", ""


@lru_cache(maxsize=None)
def v100_profile():
    """ResNet-50 at batch 64 on a V100 whose step is the grid's one-worker run."""
    v100 = dataclasses.replace(DEVICES["v100"], calibration={"resnet50": (BATCH, single())})
    return profile("resnet50", batch=BATCH, device=v100)


def testbed(gbits: float, second_gbits: float = 0.0) -> Cluster:
    """GRACE's cluster: 8 nodes of one GPU, TCP over Ethernet at ``gbits``. ``second_gbits``: a
    second interface per node that Open MPI would stripe over as well (its TCP transport uses every
    interface that is up unless told otherwise), as one link of the summed rate: a hypothesis
    about GRACE's nodes, not part of the model (0, the default: none)."""
    return Cluster(WORKERS, 1, inter=protocols.tcp(gbits + second_gbits).link())


def uncompressed_rate(gbits: float, framework="horovod-mpi", low: float = 0.05, high: float = 400.0) -> float:
    """The rate (Gb/s of data, one link per node) the model would need to predict GRACE's measured
    uncompressed throughput at ``gbits``, by bisection: a diagnostic that also carries the model's
    other errors (compute, overlap, staging), never used to predict. inf where the measured run is
    faster than the model allows even at ``high``; ``low`` where it is slower than at ``low``."""
    measured = grid().query(f"gbits == {gbits} and method == 'none'").images_per_s
    if measured.empty:
        raise ValueError(f"GRACE's grid has no uncompressed run at gbits={gbits!r}; it has 1, 10 and 25")

    def predicted(rate):
        link = LinkModel.of_rate(rate, protocols.tcp(gbits).latency, f"{rate:.3g} Gb/s")
        return iteration(v100_profile(), Cluster(WORKERS, 1, inter=link), framework=framework).throughput

    target = measured.iloc[0]
    if predicted(high) < target:
        return math.inf
    if predicted(low) > target:
        return low
    for _ in range(50):  # geometric bisection: the throughput rises with the rate
        mid = math.sqrt(low * high)
        low, high = (mid, high) if predicted(mid) < target else (low, mid)
    return math.sqrt(low * high)


def compare(framework="horovod-mpi", specs=None, compress_costs=GRACE, second_gbits=0.0,
            **iteration_kw) -> pd.DataFrame:
    """One row per measured cell with a counterpart: gbits, method, ratio, ef, family, spec,
    measured and predicted images/s, their error (predicted / measured - 1), and each one's
    speedup over the uncompressed run at that bandwidth.

    ``specs``: how each GRACE method maps to ours (default :data:`SPECS`, as GRACE's code sends
    it; :data:`LIBRARY_SPECS`, as this library does); ``compress_costs``: what times the
    compressed cells' arithmetic (default GRACE's TensorFlow compressors as counted by
    :class:`commlab.sim.grace_costs.GraceCosts`; None, this library's declarations; or a measured
    table); ``second_gbits``: :func:`testbed`'s hypothesis; ``iteration_kw`` go to every
    :func:`commlab.sim.iteration`."""
    cells = grid()
    cells = cells[~cells.method.isin(list(UNMATCHED))]
    prof = v100_profile()
    rows = []
    for c in cells.itertuples():
        spec, note = spec_of(c.method, c.ratio, c.ef, specs)
        costs = {} if spec is None else {"compress_costs": compress_costs}
        it = iteration(prof, testbed(c.gbits, second_gbits), compress=spec, framework=framework, **costs,
                       **iteration_kw)
        rows.append(dict(gbits=c.gbits, method=c.method, ratio=c.ratio, ef=c.ef, family=FAMILY[c.method],
                         spec=spec or "none", note=note, measured=c.images_per_s, predicted=it.throughput))
    table = pd.DataFrame(rows)
    table["error"] = table.predicted / table.measured - 1
    base = table[table.method == "none"].set_index("gbits")
    table["measured_speedup"] = table.measured / table.gbits.map(base.measured)
    table["predicted_speedup"] = table.predicted / table.gbits.map(base.predicted)
    return table


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per bandwidth and overall, of the compressed cells: how many, the median |error| of the
    throughput and of the speedup over none, how many the model puts on the right side of none
    (faster or slower), and where the compressor ranked first by the model stands in the
    measurements (its measured throughput over the best measured)."""
    rows = []
    compressed = table[table.method != "none"]
    for g, t in [*compressed.groupby("gbits"), ("all", compressed)]:
        right = ((t.measured_speedup > 1) == (t.predicted_speedup > 1)).sum()
        row = dict(gbits=g, cells=len(t), median_error=t.error.abs().median(),
                   speedup_error=(t.predicted_speedup / t.measured_speedup - 1).abs().median(),
                   right_side=int(right))
        if g != "all":
            pick = t.loc[t.predicted.idxmax()]
            best = table[table.gbits == g].measured.max()
            row.update(predicted_best=pick.spec, its_measured_share=pick.measured / best)
        rows.append(row)
    return pd.DataFrame(rows).set_index("gbits")


def by_family(table: pd.DataFrame) -> pd.DataFrame:
    """Median |error| of the throughput per compressor family and bandwidth (cells in brackets)."""
    t = table[table.method != "none"]
    return t.pivot_table(index="family", columns="gbits", values="error", aggfunc=lambda e: e.abs().median())
