"""Dynamic batch size: BSP whose mini-batch grows geometrically (Yu and Jin, "On the
computation and communication complexity of parallel SGD with dynamic batch sizes for
stochastic non-convex optimization", ICML 2019).

Step t (from 0) uses B_t = min(B_0 growth^t, max_batch) samples per worker, B_0 the Trainer's
``batch_size``, with a fixed learning rate::

    x_{t+1} = x_t - eta (1/W) sum_w g_w(x_t; B_t samples)

The gradient noise shrinks as B_t grows, so the same number of samples takes fewer steps,
and every step is one all-reduce: Yu and Jin show O(log T) communication rounds where
fixed-batch parallel SGD needs O(T) to process T samples per worker, at the same rate of
convergence. ``samples`` in the History tells how much data each step used.
"""
from __future__ import annotations

from .. import checks
from .bsp import BSP


class DynamicBatch(BSP):
    """``dynamic_batch(growth=1.1, max_batch=None)``: BSP with B_t = min(B_0 growth^t, max_batch)."""
    name = "dynamic_batch"

    def __init__(self, growth: float = 1.1, max_batch: int | None = None):
        if not growth >= 1:
            raise ValueError(f"growth must be >= 1 (the batch never shrinks), got {growth!r}")
        if max_batch is not None and (not checks.is_int(max_batch) or max_batch < 1):
            raise ValueError(f"max_batch must be None or an integer >= 1, got {max_batch!r}")
        self.growth, self.max_batch, self.t = float(growth), max_batch, 0

    def batch_size(self, base: int, t: int) -> int:
        """B_t = min(round(B_0 growth^t), max_batch)."""
        b = max(1, round(base * self.growth ** t))
        return b if self.max_batch is None else min(b, self.max_batch)

    def round(self, worker) -> dict:
        """One BSP step on B_t samples per worker; records the samples used."""
        b = self.batch_size(worker.config.batch_size, self.t)
        self.t += 1
        loss = worker.gradient(b)
        worker.exchange.step(worker.model, worker.optimizer)
        return {"loss": loss, "samples": b}

    def __repr__(self) -> str:
        return f"DynamicBatch(growth={self.growth}, max_batch={self.max_batch})"
