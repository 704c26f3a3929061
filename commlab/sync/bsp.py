"""Bulk synchronous parallel SGD: every step, every gradient is averaged.

    x_{t+1} = x_t - eta * (1/N) * sum_i g_i(x_t)

All N workers start from the same x_0, so after each step every replica holds the same
model: the result equals single-worker SGD on a batch N times larger (Goyal et al. 2017).
The average goes over the chosen architecture's all-reduce as one flat buffer.
"""
from __future__ import annotations

from ..flat import flatten, grads, unflatten_into


class BSP:
    name = "bsp"

    def step(self, comm, model, optimizer, arch) -> dict:
        """Average the gradients over all workers, then apply the optimizer."""
        g = grads(model)
        flat = flatten(g)
        arch.allreduce(comm, flat, op="avg")
        unflatten_into(flat, g)
        optimizer.step()
        return {}

    def __repr__(self) -> str:
        return "BSP()"
