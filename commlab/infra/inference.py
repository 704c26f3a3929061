"""Inference communication: tensor-parallel decoding, pipeline inference, and prefill/decode
disaggregation with its KV-cache transfer.

Decoding one token is a matrix-vector product per weight: it reads every weight once and does 2
FLOPs per parameter per sequence, so it is bound by memory bandwidth, not FLOPs. On an
accelerator of peak F FLOP/s and memory bandwidth W, for a model of P parameters (2 bytes each,
bf16) split over t GPUs, a batch of b sequences with c tokens of context::

    compute = max(2 P b / (t F),  (2 P + KV(b c)) / (t W))
    KV(tokens) = 2 x layers x kv_heads x head_dim x tokens x 2 bytes   (keys and values, bf16)

**Tensor parallelism** (Megatron's layer split, :mod:`commlab.parallel.tensor`) adds two
all-reduces per layer of the b x hidden activations (2 b h bytes): after attention and after the
MLP. They are tiny, so their cost is start-ups: ``2 L allreduce(2 b h, t)`` with the ring's
2 (t-1) alpha each, or recursive doubling's 2 log2(t) alpha (``allreduce=``: any flat all-reduce of
the one registry, :mod:`commlab.arch.algorithms`). Over NVLink a
token pays tens of start-ups per layer; across nodes, the network's latency decides.

**Pipeline inference** puts L/s layers on each of s stages: a token crosses s-1 hops of
2 b h bytes, so its latency is the whole model's compute plus the hops; s batches in flight keep
every stage busy, so throughput is s times one batch's.

**Disaggregation** (DistServe: Zhong et al., OSDI 2024; Splitwise: Patel et al., ISCA 2024) runs
the prompt's prefill, compute-bound, on one set of GPUs and the decoding on another, and moves the
prompt's KV cache between them: KV(prompt) bytes over the link between the two. Grouped-query
attention (LLaMA-2 70B's 8 key/value heads of 64) makes that cache 8 times smaller.

Accelerators: datasheet figures (A100 SXM 80 GB: 312 TFLOP/s bf16 dense, 2.04 TB/s; H100 SXM:
989 TFLOP/s, 3.35 TB/s), peaks, not what a kernel sustains.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from ..arch.algorithms import flat, names
from ..net.link import get_link
from ..parallel.configs import get_model as _model
from ..sim.devices import DEVICES

BYTES = 2  # bf16 weights, activations and cache


@dataclass(frozen=True)
class Accelerator:
    """A GPU for decoding: peak FLOP/s and HBM bandwidth in bytes/s."""
    name: str
    flops: float          # peak FLOP/s
    memory_bw: float      # bytes/s


# peak FLOP/s from the simulator's devices (one place for a datasheet figure); HBM bandwidth from
# the datasheets: A100 80 GB 2.039 TB/s, H100 SXM 3.35 TB/s
ACCELERATORS = {n: Accelerator(n, DEVICES[n].flops, bw) for n, bw in (("a100", 2.039e12), ("h100", 3.35e12))}


def _accelerator(device) -> Accelerator:
    return device if isinstance(device, Accelerator) else ACCELERATORS[checks.choice("accelerator", device, ACCELERATORS)]


def _tp(m, tp, where: str) -> int:
    """``tp``, if it splits the model's heads (and hidden size) evenly, as tensor parallelism must."""
    checks.count("tp", tp, where=where)
    valid = [k for k in range(1, m.heads + 1) if m.heads % k == 0 and m.hidden % k == 0]
    if tp not in valid:
        raise ValueError(f"{where}: tp={tp} must divide the {m.heads} heads and the hidden size {m.hidden} of "
                         f"{m.name}; valid tp: {', '.join(map(str, valid))}")
    return tp


def _step(batch, context, where: str) -> None:
    checks.count("batch", batch, where=where)
    checks.count("context", context, 0, where=where)


def kv_bytes(model, tokens: int) -> float:
    """Bytes of the KV cache of ``tokens`` tokens: 2 x layers x kv_heads x head_dim x tokens x 2."""
    m = _model(model)
    checks.count("tokens", tokens, 0, where="kv_bytes")
    head_dim = m.hidden // m.heads
    return 2 * m.layers * (m.kv_heads or m.heads) * head_dim * tokens * BYTES


def decode_compute(model, tp: int = 1, batch: int = 1, context: int = 1024, device="a100") -> float:
    """Seconds of one decoding step's compute on each of ``tp`` GPUs (see the module doc)."""
    m, acc = _model(model), _accelerator(device)
    _tp(m, tp, "decode_compute")
    _step(batch, context, "decode_compute")
    params = m.params()
    return max(2 * params * batch / (tp * acc.flops),
               (BYTES * params + kv_bytes(m, batch * context)) / (tp * acc.memory_bw))


@dataclass(frozen=True)
class DecodeStep:
    """One decoding step's seconds on each GPU: compute and tensor-parallel communication."""
    compute: float
    communication: float

    @property
    def time(self) -> float:
        """Seconds per token: compute + communication (no overlap)."""
        return self.compute + self.communication

    @property
    def comm_share(self) -> float:
        """The communication's share of the step: communication / time."""
        return self.communication / self.time


def tp_decode(model, tp: int, link="NVLink3-A100", batch: int = 1, context: int = 1024, device="a100",
              allreduce: str = "ring") -> DecodeStep:
    """One token of tensor-parallel decoding on ``tp`` GPUs: compute, and 2 all-reduces per layer."""
    m = _model(model)
    _tp(m, tp, "tp_decode")
    _step(batch, context, "tp_decode")
    if allreduce not in names("flat"):
        raise ValueError(f"allreduce={allreduce!r}; valid: {', '.join(names('flat'))}")
    cost = flat(allreduce).cost
    comm = 0.0 if tp == 1 else 2 * m.layers * cost(BYTES * batch * m.hidden, tp, get_link(link))
    return DecodeStep(decode_compute(m, tp, batch, context, device), comm)


def pipeline_decode(model, stages: int, link="100GbIB-survey", batch: int = 1, context: int = 1024,
                    device="a100") -> dict:
    """Pipeline inference over ``stages`` GPUs: a token's latency, and the throughput (tokens/s)
    with ``stages`` batches in flight."""
    m = _model(model)
    checks.count("stages", stages, 1, m.layers, where="pipeline_decode")  # a stage holds one layer or more
    _step(batch, context, "pipeline_decode")
    hop = get_link(link).time(BYTES * batch * m.hidden)
    latency = decode_compute(m, 1, batch, context, device) + (stages - 1) * hop
    per_stage = max(decode_compute(m, stages, batch, context, device), hop)
    return {"latency": latency, "throughput": batch / per_stage, "hops": (stages - 1) * hop}


def prefill_time(model, tokens: int, tp: int = 1, device="a100", efficiency: float = 0.5) -> float:
    """Seconds of a prompt's prefill (compute-bound): 2 P tokens + 2 L s^2 h FLOPs (attention's
    scores and values, causal) at ``efficiency`` of the peak on ``tp`` GPUs."""
    m, acc = _model(model), _accelerator(device)
    checks.count("tokens", tokens, where="prefill_time")
    _tp(m, tp, "prefill_time")
    checks.fraction("efficiency", efficiency, where="prefill_time")  # of the peak: at most 1
    flops = 2 * m.params() * tokens + 2 * m.layers * tokens * tokens * m.hidden
    return flops / (tp * acc.flops * efficiency)


def kv_transfer(model, tokens: int, link="200GbHDR-IB", tp: int = 1) -> float:
    """Seconds to move a prompt's KV cache from the prefill GPUs to the decode GPUs: each of the
    ``tp`` prefill GPUs sends its 1/tp of the heads over its own link (in parallel)."""
    _tp(_model(model), tp, "kv_transfer")
    return get_link(link).time(kv_bytes(model, tokens) / tp)

