"""Reference solutions of chapter 10: training large models."""
from __future__ import annotations

VARIABLES = {"check_zero_memory": "answer", "check_bubble": "answer", "check_tp_bytes": "answer"}


def zero_memory():
    """Exercise 1: GB per GPU under ZeRO-2: 2 Psi + (2 + 12) Psi / N bytes, Psi = 13e9, N = 16."""
    psi, N = 13e9, 16
    params, grads, optimizer = 2 * psi, 2 * psi / N, 12 * psi / N   # fp16 whole; fp16 and fp32 Adam sharded
    return (params + grads + optimizer) / 1e9


def bubble():
    """Exercise 2: the idle fraction (p - 1) / (m + p - 1) of 8 stages and 24 micro-batches."""
    p, m = 8, 24
    return (p - 1) / (m + p - 1)


def tp_bytes():
    """Exercise 3: bytes one GPU sends for a tensor-parallel layer: 4 ring all-reduces of b s h bf16 values."""
    b, s, h, t, nbytes = 4, 1024, 4096, 4, 2
    one = 2 * (t - 1) / t * b * s * h * nbytes      # a ring all-reduce of b s h values, per GPU
    return (2 + 2) * one                            # two forward, two backward
