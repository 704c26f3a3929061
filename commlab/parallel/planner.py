"""A planner for real sizes: memory, bytes and step time of a dp x tp x pp (+ZeRO) layout.

``plan("gpt3-175b", gpus=1024, tp=8, pp=16, dp=8, batch=1536)`` returns a :class:`LayoutEstimate`; every
number follows from a formula below, on a :class:`commlab.sim.Cluster` (default: DGX A100 nodes,
8 GPUs on NVSwitch, one 200 Gb/s HDR InfiniBand adapter per GPU; :mod:`commlab.net.measured`) and a
:class:`commlab.sim.Device` (default ``a100``, 312 TFLOP/s bf16). Ranks follow Megatron-LM's order
(:mod:`.layout`): a tp group inside a node when tp <= GPUs per node; the dp replicas of a stage
next; a pipeline boundary crosses nodes once a stage (tp dp GPUs) fills a node.

**Memory per GPU** (bytes). Model states: the GPU's Psi/(tp pp) parameters with mixed-precision
Adam over the dp group at the ZeRO stage (:func:`commlab.parallel.zero.zero_memory`: 16 bytes per
parameter at stage 0). Activations per layer and micro-batch of b sequences, Korthikanti et al.
2022 (Table 2): s b h (34 + 5 a s/h) with no parallelism, s b h (10 + 24/t + 5 a s/(h t)) with
tensor parallelism, s b h (34 + 5 a s/h)/t with sequence parallelism too, and 2 s b h (the layer's
input; /t with sequence parallelism) under full recomputation; the first stage holds min(m, pp)
micro-batches of its l/pp layers under 1F1B.

**Bytes per GPU per step**, 2-byte values: tensor parallelism, per layer and micro-batch, two
all-reduces of b s h forward and two backward (two more with full recomputation), each sending
2 (t-1)/t of it (:func:`commlab.parallel.tensor.tp_bytes`); the pipeline, b s h per micro-batch
each way across each boundary; data parallelism, a ring all-reduce of the Psi/(tp pp) gradient,
2 (dp-1)/dp of it (ZeRO 1, 2: a reduce-scatter and an all-gather, the same; stage 3: 1.5 times).

**Step time** (seconds): compute, the iteration's FLOPs (:meth:`ModelConfig.flops`) over
gpus x peak x ``efficiency``, the sustained fraction of peak of a transformer layer's kernels on
one GPU, which we *assume* (default 0.7: large bf16 matrix products on an A100 reach 70-80 % of
peak; it is one number for every row, never fitted to a result); the pipeline bubble multiplies
it by (m + p - 1)/m; tp all-reduces by the ring's closed form (:func:`commlab.arch.ring.cost`) on
the tp group's link, not overlapped (Megatron waits for them); a p2p message per micro-batch slot
and direction, (m + p - 1) x 2; the dp all-reduce after the pipeline flush, not overlapped.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .. import checks
from ..arch import ring
from ..sim.cluster import Cluster
from ..sim.devices import get_device
from ..net.link import get_link
from .configs import get_model
from .zero import zero_memory

EFFICIENCY = 0.7
VALUE = 2  # bytes of an fp16/bf16 value on the wire
RECOMPUTE = ("full", "none")


def dgx_a100(nodes: int) -> Cluster:
    """``nodes`` DGX A100 nodes: 8 GPUs on NVSwitch, a 200 Gb/s HDR adapter per GPU."""
    return Cluster(nodes=nodes, gpus_per_node=8, intra="NVLink3-A100", inter="200GbHDR-IB")


@dataclass
class LayoutEstimate:
    """One layout's numbers: memory per GPU and whether it fits, bytes per GPU per step, seconds by part,
    and the FLOP rate reached (see the module doc for each formula)."""
    model: str
    gpus: int
    tp: int
    pp: int
    dp: int
    zero: int
    batch: int
    micro_batch: int
    micro_batches: int
    memory: dict  # bytes per GPU: params, grads, optimizer, activations, total
    fits: bool
    bytes: dict  # per GPU per step: by collective (tp, pp, dp) and by link class (intra, inter)
    time: dict  # seconds: compute, bubble, tp, pp, dp, total
    flops_per_gpu: float  # achieved FLOP/s per GPU
    peak_fraction: float
    total_flops: float

    def row(self) -> dict:
        """A flat dict for a table: the layout, GB per GPU, GB per link class, seconds, TFLOP/s."""
        return dict(tp=self.tp, pp=self.pp, dp=self.dp, zero=self.zero, m=self.micro_batches,
                    memory_gb=self.memory["total"] / 1e9, fits=self.fits, intra_gb=self.bytes["intra"] / 1e9,
                    inter_gb=self.bytes["inter"] / 1e9, step_s=self.time["total"],
                    tflops_per_gpu=self.flops_per_gpu / 1e12, peak_pct=100 * self.peak_fraction)


def _check(cfg, gpus, tp, pp, dp, zero, batch, micro_batch, gpus_per_node, recompute) -> None:
    for name, v in (("gpus", gpus), ("tp", tp), ("pp", pp), ("dp", dp), ("batch", batch),
                    ("micro_batch", micro_batch)):
        checks.integer(name, v, where="plan")
    if tp * pp * dp != gpus:
        raise ValueError(f"plan: tp*pp*dp = {tp}*{pp}*{dp} = {tp * pp * dp} must equal gpus={gpus}")
    valid_tp = [k for k in range(1, cfg.heads + 1) if cfg.heads % k == 0 and cfg.hidden % k == 0]
    if tp not in valid_tp:
        raise ValueError(f"plan: tp={tp} must divide the {cfg.heads} heads and the hidden size {cfg.hidden}; "
                         f"valid tp: {', '.join(map(str, valid_tp))}")
    if pp > cfg.layers:
        raise ValueError(f"plan: pp={pp} is larger than the {cfg.layers} layers; valid pp: 1..{cfg.layers}")
    if zero not in (0, 1, 2, 3):
        raise ValueError(f"plan: zero={zero!r}; valid stages: 0, 1, 2, 3")
    if batch % (dp * micro_batch):
        raise ValueError(f"plan: batch={batch} must divide into dp={dp} replicas of micro-batches of {micro_batch}")
    if recompute not in RECOMPUTE:
        raise ValueError(f"plan: recompute={recompute!r}; valid: {', '.join(RECOMPUTE)}")


def activations(cfg, tp: int, pp: int, m: int, micro_batch: int, recompute: str, sequence_parallel: bool) -> float:
    """Activation bytes on the first stage (Korthikanti et al. 2022, Table 2; see the module doc)."""
    s, b, h, a = cfg.seq, micro_batch, cfg.hidden, cfg.heads
    if recompute == "full":
        per_layer = 2 * s * b * h / (tp if sequence_parallel else 1)
    elif sequence_parallel:
        per_layer = s * b * h * (34 + 5 * a * s / h) / tp
    else:
        per_layer = s * b * h * (10 + 24 / tp + 5 * a * s / (h * tp))
    return per_layer * math.ceil(cfg.layers / pp) * min(m, pp)


def plan(model, gpus: int, tp: int = 1, pp: int = 1, dp: int | None = None, zero: int = 0, batch: int | None = None,
         micro_batch: int = 1, micro_batches: int | None = None, seq: int | None = None, cluster: Cluster | None = None,
         device="a100", memory_gb: float = 80.0, recompute: str = "full", sequence_parallel: bool = False,
         efficiency: float = EFFICIENCY) -> LayoutEstimate:
    """The :class:`LayoutEstimate` of one layout (see the module doc). ``batch`` (sequences per step)
    defaults to one per GPU; give the micro-batch size ``micro_batch`` or the number of
    micro-batches per replica ``micro_batches``; ``seq`` overrides the model's sequence length."""
    cfg = get_model(model)
    if seq is not None:
        cfg = dataclasses.replace(cfg, seq=checks.count("seq", seq, where="plan"))
    for name, v in (("gpus", gpus), ("tp", tp), ("pp", pp)):
        checks.count(name, v, where="plan")
    checks.fraction("efficiency", efficiency, where="plan")
    checks.positive("memory_gb", memory_gb, where="plan")
    if cluster is not None and not isinstance(cluster, Cluster):
        raise TypeError(f"plan: cluster={cluster!r} must be a sim.Cluster (e.g. dgx_a100(nodes=2), or "
                        f"sim.Cluster(nodes=2, gpus_per_node=8, intra='NVLink3-A100', inter='200GbHDR-IB')), "
                        "or None for DGX A100 nodes")
    dp = gpus // (tp * pp) if dp is None else dp
    batch = gpus if batch is None else batch
    if micro_batches is not None:
        if not checks.is_int(micro_batches) or micro_batches < 1 \
                or dp < 1 or batch % (dp * micro_batches):
            raise ValueError(f"plan: micro_batches={micro_batches!r} must be an integer >= 1 dividing the "
                             f"{batch} sequences of each of dp={dp} replicas' share")
        micro_batch = batch // (dp * micro_batches)
    cluster = dgx_a100(max(1, math.ceil(gpus / 8))) if cluster is None else cluster
    g = cluster.gpus_per_node
    _check(cfg, gpus, tp, pp, dp, zero, batch, micro_batch, g, recompute)
    m = batch // (dp * micro_batch)
    psi = cfg.params()
    states = zero_memory(psi / (tp * pp), dp, zero)
    act = activations(cfg, tp, pp, m, micro_batch, recompute, sequence_parallel)
    memory = {**{k: states[k] for k in ("params", "grads", "optimizer")}, "activations": act,
              "total": states["total"] + act}
    intra, inter = get_link(cluster.intra), get_link(cluster.inter)
    tp_link = intra if tp <= g else inter
    pp_link = inter if tp * dp >= g else intra
    n = micro_batch * cfg.seq * cfg.hidden * VALUE  # one activation, bytes
    layers = math.ceil(cfg.layers / pp)
    tp_calls = (6 if recompute == "full" else 4) * layers * m
    tp_bytes = tp_calls * 2 * (tp - 1) / tp * n
    pp_bytes = 2 * m * n if pp > 1 else 0.0
    grad = psi / (tp * pp) * VALUE
    dp_factor = 1.5 if zero == 3 else 1.0
    dp_bytes = dp_factor * 2 * (dp - 1) / dp * grad
    by_link = {"intra": 0.0, "inter": 0.0}
    for nbytes, lk in ((tp_bytes, tp_link), (pp_bytes, pp_link), (dp_bytes, inter if dp * tp > g else intra)):
        by_link["intra" if lk is intra else "inter"] += nbytes
    peak = get_device(device).flops
    flops = cfg.flops(batch, recompute)
    compute = flops / (gpus * peak * efficiency)
    time = {"compute": compute, "bubble": compute * (pp - 1) / m,
            "tp": tp_calls * ring.cost(n, tp, tp_link) if tp > 1 else 0.0,
            "pp": (m + pp - 1) * 2 * pp_link.time(n) if pp > 1 else 0.0,
            "dp": dp_factor * ring.cost(grad, dp, inter if dp * tp > g else intra) if dp > 1 else 0.0}
    time["total"] = sum(time.values())
    achieved = flops / time["total"] / gpus
    return LayoutEstimate(cfg.name, gpus, tp, pp, dp, zero, batch, micro_batch, m, memory,
                memory["total"] <= memory_gb * 1e9, {"tp": tp_bytes, "pp": pp_bytes, "dp": dp_bytes, **by_link},
                time, achieved, achieved / peak, achieved * gpus)


def candidates(model, gpus: int, batch: int | None = None, zeros=(0, 1), gpus_per_node: int = 8, **kw):
    """Every valid layout (tp within a node, pp dividing the layers' count or not, dp the rest) at
    each ZeRO stage of ``zeros``, as a DataFrame sorted by step time, the layouts that fit first."""
    import pandas as pd

    cfg = get_model(model)
    checks.count("gpus", gpus, where="candidates")
    checks.count("gpus_per_node", gpus_per_node, where="candidates")
    batch = gpus if batch is None else checks.count("batch", batch, where="candidates")
    zeros = tuple(zeros) if isinstance(zeros, (list, tuple)) else zeros
    if not isinstance(zeros, tuple) or not zeros or any(z not in (0, 1, 2, 3) or isinstance(z, bool) for z in zeros):
        raise ValueError(f"candidates: zeros={zeros!r} must be a non-empty list of ZeRO stages; valid stages: 0, 1, 2, 3")
    rows = []
    for tp in (k for k in range(1, gpus_per_node + 1) if gpus % k == 0):
        for pp in (k for k in range(1, cfg.layers + 1) if (gpus // tp) % k == 0):
            dp = gpus // (tp * pp)
            if cfg.heads % tp or cfg.hidden % tp or batch % dp:
                continue
            for zero in zeros:
                rows.append(plan(cfg, gpus, tp, pp, dp, zero, batch, **kw).row())
    if not rows:
        raise ValueError(f"candidates: no layout of {cfg.name} on gpus={gpus} with batch={batch} (dp must divide the "
                         f"batch, tp the {cfg.heads} heads and the hidden size); try a batch that is a multiple of gpus")
    df = pd.DataFrame(rows)
    return df.sort_values(["fits", "step_s"], ascending=[False, True], ignore_index=True)


# Published figures, beside which the chapter sets the planner's (assumptions in the module doc).
PUBLISHED = {
    "megatron-1t": dict(model="gpt-1t", gpus=3072, tp=8, pp=64, dp=6, batch=3072, tflops_per_gpu=163,
                        peak_pct=52, total_pflops=502, source="Narayanan et al. SC'21, Table 1"),
    "megatron-145b": dict(model="gpt-145b", gpus=1536, tp=8, pp=8, dp=24, batch=2304, tflops_per_gpu=148,
                          peak_pct=47, total_pflops=227.1, source="Narayanan et al. SC'21, Table 1"),
    # Table 1 has no 175B row; Table 2 runs GPT-3 with t = 8, p = 12 at a batch of 1,536 and prints
    # TFLOP/s per GPU only: % of peak and PFLOP/s below are derived from it (x / 312, x gpus)
    "megatron-175b": dict(model="gpt3-175b", gpus=1536, tp=8, pp=12, dp=16, batch=1536, tflops_per_gpu=141,
                          peak_pct=45, total_pflops=216.6,
                          source="Narayanan et al. SC'21, Table 2 (% of peak and PFLOP/s derived)"),
    "zero-figure-1": dict(psi=7.5e9, n=64, gb=(120, 31.4, 16.6, 1.9), source="Rajbhandari et al. SC'20, Figure 1"),
}


def published_plan(name: str, **kw) -> LayoutEstimate:
    """The planner's LayoutEstimate for a published Megatron run of :data:`PUBLISHED`, with its layout."""
    row = PUBLISHED[name]
    return plan(row["model"], row["gpus"], row["tp"], row["pp"], row["dp"], batch=row["batch"], **kw)


__all__ = ["LayoutEstimate", "plan", "candidates", "activations", "dgx_a100", "published_plan", "PUBLISHED", "EFFICIENCY"]
