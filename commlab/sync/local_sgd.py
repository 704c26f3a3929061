"""Local SGD and post-local SGD: average models, not gradients, every H steps.

Local SGD (Stich, ICLR 2019; Lin et al., ICLR 2020) with period H: every worker runs plain SGD
on its own data, x_w <- x_w - eta g_w(x_w), and every H steps the models are averaged::

    x_w <- (1/W) sum_v x_v                      (an all-reduce of the parameters)

so H steps cost one all-reduce instead of H. Between averages each worker holds its own
model; the Trainer's test accuracy is rank 0's model, so evaluate at multiples of H
(``eval_every=H``) to see the average. H = 1 is BSP (the average of x - eta g_w is
x - eta times the average gradient; momentum buffers average the same way). Each worker keeps
its own momentum buffer.

With a compressor the workers send their compressed change since the last average instead
of the model (Jiang and Agrawal, NeurIPS 2018: quantized and sparsified local SGD)::

    x <- a + aggregate_w C(x_w - a),   a <- x       (a: the last averaged model)

Post-local SGD (Lin et al. 2020, "Don't use large mini-batches, use local SGD"): BSP for the
first ``switch`` steps, while the loss falls fast and the noise matters, local SGD with period
H after.
"""
from __future__ import annotations

import torch

from .. import checks
from .base import Synchronizer
from .bsp import BSP


class LocalSGD(Synchronizer):
    """``local_sgd(period=4)``: plain SGD on each worker, models averaged every H steps (Stich 2019)."""
    name = "local_sgd"
    needs = frozenset({"average"})  # models averaged every H steps

    def __init__(self, period: int = 4):
        self.period = checks.integer("period", period, got=True)
        self.t = 0
        self.anchor = None  # the last averaged model (for compressed differences)

    def round(self, worker) -> dict:
        """One local SGD step; every ``period`` steps, average the models."""
        if worker.exchange.compressor is not None and self.anchor is None:  # the models agree here
            self.anchor = [p.detach().clone() for p in worker.model.parameters() if p.requires_grad]
        loss = worker.gradient()
        worker.optimizer.step()
        self.t += 1
        if self.t % self.period == 0:
            self.average(worker)
        return {"loss": loss}

    def average(self, worker) -> None:
        """Replace every worker's model by the average (of the compressed changes, if any)."""
        params = [p for p in worker.model.parameters() if p.requires_grad]
        with torch.no_grad():
            if worker.exchange.compressor is None:
                for p, m in zip(params, worker.exchange.average([p.detach() for p in params])):
                    p.copy_(m)
                return
            changes = [p.detach() - a for p, a in zip(params, self.anchor)]
            for p, a, m in zip(params, self.anchor, worker.exchange.average(changes)):
                a.add_(m)
                p.copy_(a)

    def __repr__(self) -> str:
        return f"LocalSGD(period={self.period})"


class PostLocalSGD(LocalSGD):
    """``post_local_sgd(switch=100, period=4)``: BSP for ``switch`` steps, then local SGD (Lin et al. 2020)."""
    name = "post_local_sgd"
    needs = frozenset({"step", "average"})  # BSP's steps, then local SGD's model averages

    def __init__(self, switch: int = 100, period: int = 4):
        super().__init__(period)
        if not checks.is_int(switch) or switch < 0:
            raise ValueError(f"switch must be an integer >= 0 (the BSP steps first), got {switch!r}")
        self.switch, self.bsp, self.bsp_steps = switch, BSP(), 0

    def round(self, worker) -> dict:
        """BSP steps until ``switch``; then local steps, averaged every ``period`` of them."""
        if self.bsp_steps < self.switch:
            self.bsp_steps += 1
            return self.bsp.round(worker)
        return super().round(worker)

    def __repr__(self) -> str:
        return f"PostLocalSGD(switch={self.switch}, period={self.period})"
