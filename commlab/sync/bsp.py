"""Bulk synchronous parallel SGD: every step, every gradient is averaged.

    x_{t+1} = x_t - eta * (1/N) * sum_i g_i(x_t)

All N workers start from the same x_0, so after each step every replica holds the same
model: the result equals single-worker SGD on a batch N times larger (Goyal et al. 2017).
The exchange does the averaging (:mod:`commlab.arch.exchange`): over an all-reduce
architecture one flat buffer through the chosen algorithm, or, with a compressor, the
aggregate of C(g_i) over the workers, of the flat buffer as one tensor (the Trainer's
``compress_per="bucket"``) or of each parameter's gradient alone (``"tensor"``); over a
parameter server (``arch="ps"``) the server averages and applies (its BSP policy).
"""
from __future__ import annotations

from ..arch.ps_policy import BSPPolicy
from .base import Synchronizer


class BSP(Synchronizer):
    """``bsp``: x <- x - eta (1/N) sum_i g_i every step, through the architecture's exchange."""
    name = "bsp"
    schedulable = True

    def round(self, worker) -> dict:
        """One step: a mini-batch gradient on every worker, averaged, applied."""
        loss = worker.gradient()
        worker.exchange.step(worker.model, worker.optimizer)
        return {"loss": loss}

    def server_policy(self):
        """The BSP server policy: apply step t once every live worker has pushed."""
        return BSPPolicy()
