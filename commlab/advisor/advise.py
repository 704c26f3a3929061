"""The advisor: which configuration reaches a target fastest on a given cluster.

``advise(model, cluster, target=rounds, budget=None)`` ranks configurations by predicted time to
the target::

    time = iteration seconds (simulated, commlab.sim) x target rounds x convergence penalty

* **Iteration seconds** come from :func:`commlab.sim.iteration` on the cluster: compute, the
  messages of the architecture and schedule, and how much of the communication backward hides.
  Compression scales every layer's bytes by the compressor's measured wire ratio r (a 1M-value
  gradient compressed by the library): by r where the payloads are summed inside the all-reduce
  (fp16), by p r / 2 where they are all-gathered (the all-gather of p payloads of r n bytes
  against the ring all-reduce's 2 (p-1)/p n), and by (1 + r)/2 on a parameter server (compressed
  pushes, full pulls); without a schedule the Trainer compresses layer by layer after backward, so
  such a row pays one message per layer, and with WFBP the same messages overlap backward; the
  encoding time is not counted. Local SGD with period H pays the
  all-reduce once every H rounds; D-PSGD sends the model to both neighbours of a ring every round,
  after backward.
* **Penalties** are the measured table of :mod:`commlab.advisor.penalties` (1 for lossless
  options). An option that missed the target when measured is left out, and the reason is
  given under :attr:`DataFrame.attrs` ``["left_out"]``.
* Models of :mod:`commlab.parallel.configs` (GPT-3 and the like) do not fit one GPU: their rows
  are the layouts of :func:`commlab.parallel.planner.candidates` that fit in memory (all lossless);
  a model that fits no layout is refused with the memory it would need.

Each row carries its reasoning: compute, communication, the part hidden by overlap, the penalty.
Configurations not ranked, and why: asynchronous rules (see :mod:`.penalties`), compression
combined with local SGD or a schedule other than none or WFBP (penalties measured alone).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import pandas as pd
import torch

from .. import compress as compress_pkg
from ..parallel import planner
from ..parallel.configs import MODELS as LARGE
from ..sim import Cluster, comm_time, iteration
from ..sim.devices import BUILTINS, builtin
from ..schedule.profile import Profile
from .penalties import load

SCHEDULES = (None, "wfbp", "mg_wfbp", "bytescheduler")
ARCHS = ("allreduce", "ps")
COMPRESSORS = ("fp16", "qsgd(levels=16)", "terngrad", "topk(0.01)", "topk(0.01)+ef", "signsgd+ef")
LOCAL = ("local_sgd(period=4)", "local_sgd(period=16)")


@functools.lru_cache(maxsize=None)
def wire_ratio(spec: str, numel: int = 1 << 20) -> tuple[float, str]:
    """Bytes the compressor puts on the wire per byte of float32 gradient, and its aggregation."""
    c = compress_pkg.get(spec)
    g = torch.randn(numel, generator=torch.Generator().manual_seed(0))
    sent = c.summable(g) if c.aggregation == "sum" else None
    nbytes = sent.numel() * sent.element_size() if sent is not None else c.compress(g).nbytes
    return nbytes / (4 * numel), c.aggregation


def _scaled(profile: Profile, factor: float) -> Profile:
    size = profile.itemsize  # whole elements: round each layer's bytes to the element size
    return dataclasses.replace(profile, grad_bytes=tuple(size * max(1, round(b * factor / size)) for b in profile.grad_bytes))


def _row(config, compute, comm, iteration_s, penalty, target, note=""):
    """One ranked configuration: its times, its penalty, and the reasoning in words."""
    exposed = max(0.0, iteration_s - compute)
    hidden = max(0.0, comm - exposed)
    return dict(**config, compute_s=compute, comm_s=comm, hidden_s=hidden, iteration_s=iteration_s, penalty=penalty,
                rounds=target * penalty, time_s=iteration_s * target * penalty,
                reasoning=f"compute {compute * 1e3:.3g} ms + exposed communication {exposed * 1e3:.3g} ms "
                          f"({hidden * 1e3:.3g} of {comm * 1e3:.3g} ms hidden); penalty {penalty:.2f}{note}")


def _simulated(config, it, penalty, target, note=""):
    return _row(config, it.single, sum(m.end - m.start for m in it.messages), it.time, penalty, target, note)


def _data_parallel(profile, cluster, target, table, left_out):
    rows, p = [], cluster.gpus
    pen = table["penalty"].to_dict()
    compute = sum(profile.forward_s) + sum(profile.backward_s)

    def config(sync, arch, compress="none", schedule=None):
        return dict(sync=sync, arch=arch, compress=compress, schedule=schedule or "none", layout=f"dp={p}")

    for arch in ARCHS:
        for sched in SCHEDULES:
            rows.append(_simulated(config("bsp", arch, schedule=sched), iteration(profile, cluster, arch=arch,
                                                                                  schedule=sched), 1.0, target))
        base = iteration(profile, cluster, arch=arch)
        for spec in COMPRESSORS:
            if not table.loc[spec, "reached"]:
                left_out[f"compress={spec}"] = "missed the target when its penalty was measured"
                continue
            r, agg = wire_ratio(spec)
            factor = (1 + r) / 2 if arch == "ps" else (r if agg == "sum" else p * r / 2)
            scaled, note = _scaled(profile, factor), f" ({agg}, {r:.3g} of the bytes, x{factor:.3g} on the wire)"
            # without a schedule the Trainer compresses and sends layer by layer after backward
            per_layer = sum(map(comm_time(cluster, arch), scaled.grad_bytes))
            rows.append(_row(config("bsp", arch, spec), compute, per_layer, compute + per_layer, pen[spec], target,
                             note + ", one message per layer after backward"))
            rows.append(_simulated(config("bsp", arch, spec, "wfbp"), iteration(scaled, cluster, arch=arch,
                                                                                schedule="wfbp"),
                                   pen[spec], target, note))
        for spec in LOCAL:
            period = int(spec.split("=")[1].rstrip(")"))
            comm = (base.time - base.single) / period
            rows.append(_row(config(spec, arch), compute, comm, compute + comm, pen[spec], target,
                             f" (one all-reduce every {period} rounds)"))
    link = cluster.inter if cluster.nodes > 1 else cluster.intra
    gossip = 2 * link.time(sum(profile.grad_bytes))
    rows.append(_row(config("dpsgd", "gossip(ring)"), compute, gossip, compute + gossip, pen["dpsgd"], target,
                     " (the model to both ring neighbours after backward)"))
    return rows


def _large(model, cluster, target, batch, memory_gb):
    layouts = planner.candidates(model, cluster.gpus, batch=batch, gpus_per_node=cluster.gpus_per_node,
                                 cluster=cluster, memory_gb=memory_gb)
    fits = layouts[layouts["fits"]]
    if fits.empty:
        need = layouts["memory_gb"].min()
        raise ValueError(f"advise: {model} cannot be placed on {cluster.gpus} GPUs of {memory_gb:g} GB: the "
                         f"leanest layout needs {need:.1f} GB per GPU; add GPUs or memory")
    rows = []
    for _, l in fits.iterrows():
        layout = f"dp={int(l.dp)},tp={int(l.tp)},pp={int(l.pp)},zero={int(l.zero)}"
        rows.append(dict(sync="bsp", arch="3d", compress="none", schedule="1f1b", layout=layout, compute_s=math.nan,
                         comm_s=math.nan, hidden_s=math.nan, iteration_s=l.step_s, penalty=1.0, rounds=target,
                         time_s=l.step_s * target,
                         reasoning=f"{l.memory_gb:.1f} GB per GPU; {l.tflops_per_gpu:.0f} TFLOP/s per GPU "
                                   f"({l.peak_pct:.0f}% of peak); lossless"))
    return rows


def advise(model, cluster: Cluster, target: int = 1000, budget: float | None = None, batch: int | None = None,
           memory_gb: float = 80.0) -> pd.DataFrame:
    """Configurations ranked by predicted seconds to reach ``target`` rounds of BSP's progress
    (see the module doc); ``budget``: keep those under it (seconds); ``batch``: sequences per step
    for a large model. The DataFrame's ``attrs["left_out"]`` says what was not ranked and why."""
    if isinstance(target, bool) or not isinstance(target, int) or target < 1:
        raise ValueError(f"advise: target={target!r} must be a number of rounds (an integer >= 1)")
    if budget is not None and not (isinstance(budget, (int, float)) and budget > 0):
        raise ValueError(f"advise: budget={budget!r} must be seconds > 0, or None")
    if not isinstance(cluster, Cluster):
        raise ValueError(f"advise: cluster must be a commlab.sim.Cluster, got {cluster!r}")
    left_out = {"ssp, asp": "asynchronous: steps are single updates, not rounds; no stragglers in the simulator"}
    if isinstance(model, str) and model in LARGE:
        rows = _large(model, cluster, target, batch, memory_gb)
    elif isinstance(model, Profile) or model in BUILTINS:
        profile = model if isinstance(model, Profile) else builtin(model)
        rows = _data_parallel(profile, cluster, target, load(), left_out)
    else:
        raise ValueError(f"advise: unknown model {model!r}; valid: {', '.join([*BUILTINS, *LARGE])} or a Profile")
    table = pd.DataFrame(rows).sort_values("time_s", kind="stable", ignore_index=True)
    if budget is not None:
        within = table[table["time_s"] <= budget]
        if within.empty:
            best = table.iloc[0]
            raise ValueError(f"advise: no configuration reaches the target within budget={budget:g} s; the fastest, "
                             f"{best['sync']} / {best['arch']} / {best['compress']} / {best['schedule']}, needs "
                             f"{best['time_s']:.4g} s")
        table = within.reset_index(drop=True)
    table.index = table.index + 1
    table.index.name = "rank"
    table.attrs["left_out"] = left_out
    return table
