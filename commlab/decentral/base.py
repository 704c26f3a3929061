"""What every decentralized synchronizer shares (D-PSGD, DCD-PSGD, ECD-PSGD, CHOCO-SGD, the
naive compressed gossip, AD-PSGD): worker i keeps its own model x_i and talks only to its
neighbours through the gossip exchange (:mod:`commlab.decentral.architecture`).

The models live as one flat vector per worker. Every rule ends its step with the local SGD
step on the gradient taken at the model the step started with, as the Trainer configures it
(lr, momentum, weight_decay; torch's SGD rule, dampening 0)::

    d <- g_i(x_i) + wd x_i;   m <- mu m + d (m = d at the first step);   x_i' <- mixed - lr m

where ``mixed`` is what the rule's communication made of x_i. Writing the step once here
keeps every rule equal to D-PSGD where the math says it must (exact compression).

Instrumentation, after every synchronous step (not charged on the clock, not counted in the
bytes; :meth:`~commlab.decentral.architecture.GossipExchange.measure`): the average model
x_bar, which the Trainer evaluates, and the consensus distance (1/n) sum_i ||x_i - x_bar||^2,
which the History keeps. The same all-reduce carries every worker's health: a NaN/Inf in a
model or a loss above :data:`DIVERGED_LOSS` ends the run on every rank at once with
:class:`~commlab.history.Diverged`, naming the step and the first worker that diverged.
"""
from __future__ import annotations

import math

import torch

from .. import compress as compress_pkg
from ..compress.base import Compressor
from ..flat import flatten, grads, unflatten_into
from ..history import DIVERGED_LOSS, Diverged
from ..sync.base import Synchronizer


class Decentralized(Synchronizer):
    """Base class: ``update(worker, x, g) -> x'`` is the rule; ``compresses``: whether it may send
    compressed values (with ``compress=None`` it sends them exactly), else ``compress`` must be None."""

    needs = frozenset({"neighbours"})
    default_arch = "gossip"
    compresses = False

    def __init__(self):
        self.t = 0  # steps taken
        self.momentum = None

    # ----- before any rank starts ------------------------------------------------------------
    def check(self, config) -> None:
        """The rule's compressor, where it sends one, is one it can use (:meth:`compressor_for`)."""
        if self.compresses and config.compress is not None:
            self.compressor_for(config.compress)

    def compressor_for(self, spec) -> Compressor:
        """The compressor this rule sends with (CHOCO scales an unbiased one into a contraction, or refuses it)."""
        return compress_pkg.get(spec)

    # ----- a step ------------------------------------------------------------------------
    def round(self, worker) -> dict:
        """One step: a gradient, the rule's :meth:`update` of the flat model, then :meth:`measure`."""
        loss = worker.gradient()
        params = [p for p in worker.model.parameters() if p.requires_grad]
        x, g = flatten(p.detach() for p in params), flatten(grads(worker.model))
        self.t += 1
        with torch.no_grad():
            new = self.update(worker, x, g)
            unflatten_into(new, params)
        return self.measure(worker, new, loss)

    def update(self, worker, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        """The rule's new model x_i from the current x and gradient g (subclasses implement it)."""
        raise NotImplementedError

    def sgd(self, worker, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        """The local step's direction lr m (see the module doc), to subtract from the mixed model."""
        c = worker.config
        d = g + c.weight_decay * x if c.weight_decay else g
        if c.momentum:
            self.momentum = d.clone() if self.momentum is None else self.momentum.mul_(c.momentum).add_(d)
            d = self.momentum
        return d * c.lr

    def measure(self, worker, x: torch.Tensor, loss: float) -> dict:
        """The step's record (loss, consensus distance, average model); raises Diverged on NaN/Inf."""
        bad = not math.isfinite(loss) or loss > DIVERGED_LOSS or not bool(torch.isfinite(x).all())
        mean, distance, diverged = worker.exchange.measure(x, flag=float(bad))
        if diverged:
            raise Diverged(self.name, self.t, diverged[0], "a NaN/Inf in its model or a loss above "
                           f"{DIVERGED_LOSS:g}; lower lr" + (" or gamma" if hasattr(self, "gamma") else ""))
        return {"loss": loss, "consensus": distance, "average": mean.to(x.dtype)}
