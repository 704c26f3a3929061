"""Hogwild!: lock-free asynchronous SGD on shared memory (Recht, Re, Wright and Niu, NeurIPS 2011).

All worker threads read and write one shared parameter vector x without any lock::

    read   x_w <- x                 (a copy; other threads may be writing meanwhile)
    grad   g_w = grad f(x_w; batch_w)
    write  x <- x - eta g_w         (in place, racing with the other threads' writes)

Nothing goes over a network: the "communication" is memory traffic, so no bytes are counted
and the simulated clock sees only compute. The staleness of a write is the number of other
writes between its read and itself. Only the threads runtime shares memory between ranks,
and thread scheduling decides the interleaving, so Hogwild runs are not bit-reproducible.
"""
from __future__ import annotations

import torch

from ..flat import flatten, grads, unflatten_into
from .base import Synchronizer


class SharedParams:
    """The one parameter vector all threads update, and a count of the updates made."""

    def __init__(self, model: torch.nn.Module):
        self.x = flatten(p.detach() for p in model.parameters() if p.requires_grad).clone()
        self.updates = 0


class Hogwild(Synchronizer):
    """``hogwild``: lock-free SGD on one parameter vector shared by every thread (Recht et al. 2011)."""
    name = "hogwild"
    # threads update one shared vector directly: no arch, no compression, no momentum, threads only
    needs, takes_arch, compresses, takes_momentum, runtimes = frozenset(), False, False, False, ("threads",)

    def __init__(self):
        self.shared = None
        self.read_at = 0

    def shared_state(self, build) -> SharedParams:
        """The one shared parameter vector, built from the run's initial model."""
        return SharedParams(build())

    def bind(self, shared: SharedParams) -> None:
        """Hold the shared parameter vector every thread reads and writes."""
        self.shared = shared

    def round(self, worker) -> dict:
        """Read x, compute a gradient, write x <- x - eta g without a lock; records the staleness."""
        params = [p for p in worker.model.parameters() if p.requires_grad]
        with torch.no_grad():
            unflatten_into(self.shared.x.clone(), params)  # read (may see a half-written x)
        self.read_at = self.shared.updates
        loss = worker.gradient()
        lr = worker.optimizer.param_groups[0]["lr"]
        g = flatten(grads(worker.model))
        if worker.optimizer.param_groups[0]["weight_decay"]:
            g.add_(flatten(p.detach() for p in params), alpha=worker.optimizer.param_groups[0]["weight_decay"])
        staleness = self.shared.updates - self.read_at
        self.shared.x.add_(g, alpha=-lr)  # write, without a lock
        self.shared.updates += 1
        with torch.no_grad():
            unflatten_into(self.shared.x.clone(), params)  # the model rank 0 evaluates
        return {"loss": loss, "staleness": staleness}

    def __repr__(self) -> str:
        return "Hogwild()"
