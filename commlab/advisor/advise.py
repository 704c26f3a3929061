"""The advisor: which configuration reaches a target fastest on a given cluster.

``advise(model, cluster, target=rounds, budget=None)`` ranks configurations by predicted time to
the target::

    time = iteration seconds (simulated, commlab.sim) x target rounds x convergence penalty

**Every row runs as printed.** Its ``sync``, ``arch``, ``compress`` and ``schedule`` are the
Trainer's own specs, and ``Trainer(workers=row.workers, sync=..., arch=..., compress=...,
schedule=...)`` accepts them (asked of the Trainer itself, :mod:`.runnable`). The all-reduce is
``arch="ring"`` (NCCL's ring through every GPU, the simulator's default),
``"hierarchical(group_size=g)"`` on a cluster built with ``allreduce="hierarchical"``, any
other registered all-reduce by its name, and ``"native"`` for ``allreduce="nccl"``
(:func:`trainer_archs`); the
parameter server is ``"ps(shards=S)"`` with one server per node, as the simulator places them;
gossip is ``"gossip(topology='ring')"``; ``compress`` and ``schedule`` are None where there is
none, the Trainer's own value (D-PSGD refuses ``compress="none"`` as a compressor). On one node
the simulated parameter server is BytePS's non-distributed mode, a plain all-reduce, which the
Trainer's ``ps`` is not: no ``ps`` row is ranked there. A configuration the Trainer refuses (a schedule over a
compressed parameter server, local SGD over a server, TernGrad's own protocol over a server) is not
ranked: ``attrs["left_out"]`` gives the Trainer's message. Rows of the large models of
:mod:`commlab.parallel.configs` cannot train here: their column ``runs`` says so, per row (a
simulated what-if); every other row's says ``as printed``.

* **Iteration seconds** come from :func:`commlab.sim.iteration` on the cluster: compute, the
  messages of the architecture and schedule, and how much of the communication backward hides.
  A compressor over the all-reduce is simulated as the Trainer sends it
  (:mod:`commlab.sim.compression`, ``compress_per="bucket"``): without a schedule the fused
  buffer in one message after backward, with WFBP each layer's bucket; each bucket's declared
  collectives (an all-reduce of summable payloads, an all-gather of the others) and its encode and
  decode on the profile's device (the RTX 2080 Ti of the survey's profiles), printed as
  ``arithmetic_s``. Over a parameter server, which the simulator does not compress, every layer's
  bytes are scaled by the compressor's measured wire ratio r (a 1M-value gradient compressed by the
  library): by (1 + r)/2 (compressed pushes, full pulls), the encoding not counted. Local SGD with
  period H (read from the spec by the synchronizer's registry) pays the all-reduce once every H rounds; D-PSGD sends the model to both neighbours of a
  ring every round, after backward.
* **Penalties** are :func:`commlab.advisor.horizon.for_ranking` of the measured tables: the worse
  of two short problems, each option at its own tuned learning rate, never below 1 (1 for lossless
  options); an option that missed a short problem's target but reaches the top of the long
  horizon's ladder (:mod:`.horizon`) is ranked by its penalty there. The row's ``horizon`` says
  which, its reasoning gives the measured values; an option that misses on every horizon is left
  out, with the reason. The time to the target is the product of the two factors printed,
  ``iteration_s`` and ``rounds``.
* Models of :mod:`commlab.parallel.configs` (GPT-3 and the like) do not fit one GPU: their rows
  are the layouts of :func:`commlab.parallel.planner.candidates` that fit in memory (all lossless);
  a model that fits no layout is refused with the memory it would need.
* A measured profile whose data-parallel worker does not fit the GPU (:func:`.caveats.zero_instead`)
  gets rows for the ZeRO stages that do (BSP's math, penalty 1; stages 1 and 2 move an all-reduce's
  bytes, stage 3 1.5 times that), and none for data parallelism.

Not ranked: asynchronous rules (see :mod:`.penalties`), and compression combined with local SGD,
gossip or a schedule other than WFBP (the penalties are measured for each option alone).
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import math

import pandas as pd
import torch

from .. import checks
from .. import compress as compress_pkg
from .caveats import within_error, zero_instead
from .. import sync as sync_pkg
from ..arch.algorithms import ALLREDUCES
from ..parallel import planner
from ..parallel.configs import MODELS as LARGE
from ..schedule.profile import Profile
from ..sim import Cluster, iteration
from ..sim.devices import BUILTINS, get_device
from ..sim.profile_file import resolve
from .horizon import for_ranking
from .penalties import CAP
from .runnable import SPECS, refusal

SCHEDULES = ("none", "wfbp", "mg_wfbp", "bytescheduler")
COMPRESSORS = ("fp16", "qsgd(levels=16)", "terngrad", "topk(0.01)", "topk(0.01)+ef", "signsgd+ef")
LOCAL = ("local_sgd(period=4)", "local_sgd(period=16)")
GOSSIP = "gossip(topology='ring')"
AS_PRINTED = "as printed"


@functools.lru_cache(maxsize=None)
def wire_ratio(spec: str, numel: int = 1 << 20) -> tuple[float, str]:
    """Bytes the compressor puts on the wire per byte of float32 gradient, and its aggregation."""
    c = compress_pkg.get(spec)
    g = torch.randn(numel, generator=torch.Generator().manual_seed(0))
    sent = c.summable(g) if c.aggregation == "sum" else None
    nbytes = sent.numel() * sent.element_size() if sent is not None else c.compress(g).nbytes
    return nbytes / (4 * numel), c.aggregation


def _none(spec: str):
    """The Trainer's value for no compression or no schedule is None."""
    return None if spec == "none" else spec


def trainer_archs(cluster: Cluster) -> dict:
    """The Trainer's spec of each architecture the simulator times on ``cluster``, by the simulator's
    name: its all-reduce, and its parameter server with one server (shard) per node.

    The all-reduce is the registered one the cluster names (one registry for both,
    :mod:`commlab.arch.algorithms`), given the cluster's GPUs per node where its run takes a
    ``group_size`` ("hierarchical(group_size=4)"); a selection rule of the simulator
    (:data:`commlab.sim.closed_forms.CHOICES`: "nccl", NCCL's own per-message choice) is the
    runtime's own all-reduce, "native", which NCCL's runtime runs by that same choice."""
    name = cluster.allreduce
    if name not in ALLREDUCES:
        allreduce = "native"
    elif "group_size" in inspect.signature(ALLREDUCES[name].run).parameters:
        allreduce = f"{name}(group_size={cluster.gpus_per_node})"
    else:
        allreduce = name
    return {"allreduce": allreduce, "ps": f"ps(shards={cluster.nodes})"}


def _scaled(profile: Profile, factor: float) -> Profile:
    size = profile.itemsize  # whole elements: round each layer's bytes to the element size; the
    # bytes on the wire no longer fill the layer's tensors, so the scaled profile has no shapes
    return dataclasses.replace(profile, grad_bytes=tuple(size * max(1, round(b * factor / size))
                                                         for b in profile.grad_bytes), shapes=())


def _row(config, compute, comm, iteration_s, penalty, target, how="", measured="", horizon="", arithmetic=0.0):
    """One ranked configuration: its times, its penalty, and the reasoning in words (``how``: how
    its communication was timed; ``measured``: the penalties the one used comes from; ``horizon``:
    which problems measured it; ``arithmetic``: seconds of compression arithmetic per iteration)."""
    exposed = max(0.0, iteration_s - compute - arithmetic)
    hidden = max(0.0, comm - exposed)
    if hidden <= 1e-9 * comm:  # the rounding of a sum, not time hidden
        hidden = 0.0
    return dict(**config, compute_s=compute, arithmetic_s=arithmetic, comm_s=comm, hidden_s=hidden,
                iteration_s=iteration_s, penalty=penalty, horizon=horizon, rounds=target * penalty,
                time_s=iteration_s * target * penalty,
                reasoning=f"compute {compute * 1e3:.3g} ms + exposed communication {exposed * 1e3:.3g} ms "
                          f"({hidden * 1e3:.3g} of {comm * 1e3:.3g} ms hidden){how}; penalty {penalty:.2f}"
                          + (f" ({measured})" if measured else "") + (f" [{horizon}]" if horizon else ""))


def _simulated(config, it, penalty, target, how="", measured="", horizon=""):
    arithmetic = 0.0 if it.compression is None else it.compression.arithmetic_s
    return _row(config, it.single, sum(m.end - m.start for m in it.messages), it.time, penalty, target, how,
                measured, horizon, arithmetic)


def _candidates(cluster: Cluster):
    """(sim arch, sync, compress, schedule) of every configuration the advisor can time."""
    archs = ["allreduce", "ps"] if cluster.nodes > 1 else ["allreduce"]
    for arch in archs:
        for sched in SCHEDULES:
            yield arch, "bsp", "none", sched
        for spec in COMPRESSORS:
            for sched in ("none", "wfbp"):
                yield arch, "bsp", spec, sched
        for spec in LOCAL:
            yield arch, spec, "none", "none"
    yield "gossip", "dpsgd", "none", "none"


def _data_parallel(profile, cluster, target, left_out):
    rows, p = [], cluster.gpus
    pen = for_ranking()
    compute = sum(profile.forward_s) + sum(profile.backward_s)
    names = {**trainer_archs(cluster), "gossip": GOSSIP}
    if cluster.nodes == 1:
        left_out["arch=ps"] = ("on one node the simulated parameter server is BytePS's non-distributed mode, a plain "
                               "all-reduce, which the Trainer's ps does not do")
    for arch, sync, spec, sched in _candidates(cluster):
        config = dict(sync=sync, arch=names[arch], compress=_none(spec), schedule=_none(sched), workers=p,
                      runs=AS_PRINTED)
        why = refusal(p, sync, names[arch], config["compress"], config["schedule"])
        if why is not None:
            left_out[" / ".join(map(str, (sync, names[arch], spec, sched)))] = f"the Trainer: {why}"
            continue
        option = spec if spec != "none" else sync
        if option != "bsp" and not pen.loc[option, "reached"]:
            left_out[option] = (f"missed the target within {CAP} x BSP's rounds when its penalty was measured; "
                                f"{pen.loc[option, 'note']}")
            continue
        penalty = 1.0 if option == "bsp" else float(pen.loc[option, "penalty"])
        measured = "" if option == "bsp" else pen.loc[option, "note"]
        horizon = "" if option == "bsp" else pen.loc[option, "horizon"]
        if spec != "none" and arch == "allreduce":  # the simulator's compression, as the Trainer sends it
            it = iteration(profile, cluster, arch=arch, schedule=sched, compress=spec,
                           device=profile.device or "rtx2080ti")
            c = it.compression
            how = (f"; {spec} by bucket: {c.wire_bytes / 1e6:.3g} MB per worker on the wire, encode and decode "
                   f"{c.arithmetic_s * 1e3:.3g} ms on the {(profile.device or get_device('rtx2080ti')).name}")
            rows.append(_simulated(config, it, penalty, target, how, measured, horizon))
        elif spec != "none":
            r, agg = wire_ratio(spec)
            factor = (1 + r) / 2 if arch == "ps" else (r if agg == "sum" else p * r / 2)
            scaled = _scaled(profile, factor)
            how = f"; {agg}: {r:.3g} of the bytes, x{factor:.3g} on the wire"
            if sched == "none":  # the Trainer compresses the fused buffer: one message after backward
                how += ", one fused message after backward"
            rows.append(_simulated(config, iteration(scaled, cluster, arch=arch,
                                                     schedule=None if sched == "none" else sched), penalty,
                                   target, how, measured, horizon))
        elif sync in LOCAL:
            period = sync_pkg.get(sync).period  # the registry reads the spec (commlab.spec.parse)
            base = iteration(profile, cluster, arch=arch)
            comm = (base.time - base.single) / period
            rows.append(_row(config, compute, comm, compute + comm, penalty, target,
                             f"; one all-reduce every {period} rounds", measured, horizon))
        elif arch == "gossip":
            link = cluster.inter if cluster.nodes > 1 else cluster.intra
            gossip = 2 * link.time(sum(profile.grad_bytes))
            rows.append(_row(config, compute, gossip, compute + gossip, penalty, target,
                             "; the model to both ring neighbours after backward", measured, horizon))
        else:
            rows.append(_simulated(config, iteration(profile, cluster, arch=arch,
                                                     schedule=None if sched == "none" else sched), 1.0, target))
    return rows


ZERO_BYTES = {1: 1.0, 2: 1.0, 3: 1.5}  # per step, over an all-reduce's (Rajbhandari et al., SC 2020, sec. 7)


def _zero(profile, cluster, target, stages, left_out):
    """Rows for the ZeRO stages that fit, where a data-parallel worker does not: BSP's math (penalty
    1), its reduce-scatter and all-gather timed as an all-reduce of ZERO_BYTES times the bytes."""
    left_out["data parallelism"] = "a worker does not fit the GPU's memory; only the ZeRO stages that fit are ranked"
    rows = []
    for stage, gb in stages:
        config = dict(sync="bsp", arch=f"zero(stage={stage})", compress=None, schedule=None, workers=cluster.gpus,
                      runs=AS_PRINTED)
        it = iteration(_scaled(profile, ZERO_BYTES[stage]), cluster, arch="allreduce")
        rows.append(_simulated(config, it, 1.0, target, f"; ZeRO stage {stage}: {gb:.3g} GB per GPU, "
                                                        f"{ZERO_BYTES[stage]:g} x an all-reduce's bytes"))
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
        layout = f"dp={int(l.dp)},tp={int(l.tp)},pp={int(l.pp)},micro_batches={int(l.m)},schedule=1f1b"
        rows.append(dict(sync="bsp", arch=f"zero(stage={int(l.zero)})" if l.zero else "native", compress=None,
                         schedule=None, workers=cluster.gpus, parallel=layout,
                         runs=f"what-if: {model} is too large to train here (the Trainer runs 3D layouts of "
                              "model='transformer' only)",
                         compute_s=math.nan, arithmetic_s=0.0, comm_s=math.nan, hidden_s=math.nan,
                         iteration_s=l.step_s, penalty=1.0, horizon="",
                         rounds=target, time_s=l.step_s * target,
                         reasoning=f"{l.memory_gb:.1f} GB per GPU; {l.tflops_per_gpu:.0f} TFLOP/s per GPU "
                                   f"({l.peak_pct:.0f}% of peak); lossless"))
    return rows


def advise(model, cluster: Cluster, target: int = 1000, budget: float | None = None, batch: int | None = None,
           memory_gb: float = 80.0) -> pd.DataFrame:
    """Configurations ranked by predicted seconds to reach ``target`` rounds of BSP's progress
    (see the module doc); ``budget``: keep those under it (seconds); ``batch``: sequences per step
    for a large model. The DataFrame's ``attrs["left_out"]`` says what was not ranked and why."""
    if not checks.is_int(target) or target < 1:
        raise ValueError(f"advise: target={target!r} must be a number of rounds (an integer >= 1)")
    if budget is not None and not (isinstance(budget, (int, float)) and budget > 0):
        raise ValueError(f"advise: budget={budget!r} must be seconds > 0, or None")
    if not isinstance(cluster, Cluster):
        raise ValueError(f"advise: cluster must be a commlab.sim.Cluster, got {cluster!r}")
    left_out = {"ssp, asp": "asynchronous: steps are single updates, not rounds; no stragglers in the simulator"}
    if isinstance(model, str) and model in LARGE:
        rows = _large(model, cluster, target, batch, memory_gb)
    else:
        try:
            profile = resolve(model)
        except ValueError:
            raise ValueError(f"advise: unknown model {model!r}; valid: {', '.join([*BUILTINS, *LARGE])}, "
                             "a profile file (.json) or a Profile") from None
        stages = zero_instead(profile, memory_gb, cluster.gpus)  # []: a data-parallel worker fits
        rows = _zero(profile, cluster, target, stages, left_out) if stages else \
            _data_parallel(profile, cluster, target, left_out)
    table = pd.DataFrame(rows)
    for name in SPECS:  # None stays None, as the Trainer takes it (pandas 3 stores a missing string as NaN)
        table[name] = pd.Series([row[name] for row in rows], dtype=object)
    table = within_error(table)
    table = table.sort_values("time_s", kind="stable", ignore_index=True)
    if budget is not None:
        within = table[table["time_s"] <= budget]
        if within.empty:
            best = table.iloc[0]
            raise ValueError(f"advise: no configuration reaches the target within budget={budget:g} s; "
                             f"the fastest, {best['sync']} / {best['arch']} / {best['compress']} / "
                             f"{best['schedule']}, needs {best['time_s']:.4g} s")
        table = within.reset_index(drop=True)
    table.index = table.index + 1
    table.index.name = "rank"
    table.attrs["left_out"] = left_out
    return table
