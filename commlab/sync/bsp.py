"""Bulk synchronous parallel SGD: every step, every gradient is averaged.

    x_{t+1} = x_t - eta * (1/N) * sum_i g_i(x_t)

All N workers start from the same x_0, so after each step every replica holds the same
model: the result equals single-worker SGD on a batch N times larger (Goyal et al. 2017).
The average goes over the chosen architecture's all-reduce as one flat buffer. With a
compressor, each parameter's gradient g_i is replaced by the aggregate of C(g_i) over the
workers (:func:`commlab.compress.aggregate.aggregate_all`, layer by layer, as compression
papers apply it), through the same all-reduce algorithm where payloads are summable.
Over a parameter server (``arch="ps"``) the server averages and applies (its BSP policy).
"""
from __future__ import annotations

from ..flat import flatten, grads, unflatten_into


class BSP:
    name = "bsp"

    def round(self, worker) -> dict:
        """One step: a mini-batch gradient on every worker, averaged, applied."""
        loss = worker.gradient()
        if worker.client is not None:
            worker.client.step(worker.model)
        else:
            self.step(worker.comm, worker.model, worker.optimizer, worker.arch, worker.compressor)
        return {"loss": loss}

    def ps_policy(self):
        """The parameter-server policy of this synchronizer."""
        return "bsp"

    def step(self, comm, model, optimizer, arch, compressor=None) -> dict:
        """Average the gradients over all workers (compressed if a compressor is given), then
        apply the optimizer."""
        g = grads(model)
        if compressor is None:
            flat = flatten(g)
            arch.allreduce(comm, flat, op="avg")
            unflatten_into(flat, g)
        else:
            from ..compress.aggregate import aggregate_all

            for gi, avg in zip(g, aggregate_all(comm, compressor, g, range(len(g)), arch.name, **arch.kw)):
                gi.copy_(avg)
        optimizer.step()
        return {}

    def __repr__(self) -> str:
        return "BSP()"
