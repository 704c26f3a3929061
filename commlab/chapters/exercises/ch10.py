"""Exercises of chapter 10: training large models."""
from __future__ import annotations

from ...parallel.pipeline import bubble_fraction
from ...parallel.tensor import tp_bytes
from ...parallel.zero import zero_memory
from . import check_number

# Exercise 1: a 13-billion-parameter model, ZeRO stage 2 over 16 GPUs, mixed-precision Adam.
ZERO_CASE = dict(psi=13e9, n=16, stage=2)

# Exercise 2: a pipeline of 8 stages and 24 micro-batches.
BUBBLE_CASE = dict(p=8, m=24)

# Exercise 3: a layer with hidden size 4096, micro-batch of 4 sequences of 1,024 tokens, split over
# 4 GPUs, bf16 (2 bytes per value): bytes one GPU sends for the layer's forward and backward.
TP_CASE = dict(b=4, s=1024, h=4096, t=4, bytes_per_value=2)


def zero_gb(case=None) -> float:
    """GB per GPU of the case's ZeRO stage (:func:`~commlab.parallel.zero.zero_memory`)."""
    c = case or ZERO_CASE
    return zero_memory(c["psi"], c["n"], c["stage"])["total"] / 1e9


def tp_layer_bytes(case=None) -> float:
    """Bytes one GPU sends for the case's tensor-parallel layer, forward plus backward."""
    c = case or TP_CASE
    out = tp_bytes(c["b"], c["s"], c["h"], c["t"], c["bytes_per_value"])
    return out["forward"] + out["backward"]


def check_zero_memory(answer) -> bool:
    """Exercise 1: GB per GPU of model states (parameters, gradients, optimizer) under ZeRO-2."""
    return check_number("GB per GPU under ZeRO-2", answer, zero_gb(), rel=0.01,
                        hint="Stage 2 keeps the fp16 parameters whole (2 Psi) and 1/N of the fp16 gradients and "
                             "of the 12 bytes of fp32 optimizer state: 2 Psi + (2 + 12) Psi / N bytes.")


def check_bubble(answer) -> bool:
    """Exercise 2: the idle fraction of the pipeline."""
    c = BUBBLE_CASE
    return check_number("bubble fraction", answer, bubble_fraction(c["p"], c["m"]), rel=0.01,
                        hint="Each stage idles for p - 1 of the m + p - 1 slots of a step.")


def check_tp_bytes(answer) -> bool:
    """Exercise 3: bytes one GPU sends for one tensor-parallel layer, forward and backward."""
    return check_number("bytes per GPU per layer", answer, tp_layer_bytes(), rel=0.01,
                        hint="Two all-reduces forward and two backward, each of b s h values; a ring all-reduce "
                             "sends 2 (t-1)/t of its bytes from each GPU.")
