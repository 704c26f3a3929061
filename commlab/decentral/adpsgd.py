"""AD-PSGD: asynchronous decentralized parallel SGD (Lian, Zhang, Zhang and Liu,
"Asynchronous decentralized parallel stochastic gradient descent", ICML 2018).

No global step and no barrier. Each worker w loops::

    x_hat = x_w                                 read its model
    g = g_w(x_hat)                              compute a gradient (others may average with x_w meanwhile)
    pick a random neighbour j;  x_w, x_j <- (x_w + x_j) / 2       atomically
    x_w <- x_w - lr g                           apply the (stale) gradient

A straggler computes slowly and so starts few pairings, but its model is there to average
with while it computes: the others do not wait for it, unlike all-reduce (everyone waits) and
D-PSGD (its neighbours wait, and theirs in turn). Pairings never deadlock: their order is
fixed before launch by :func:`commlab.decentral.pairing.pairings`, which takes the two models
of a pairing together when both are free, a deadlock-free stand-in for the paper's bipartite
active/passive split that works on any graph (see there), on the run's timing model.

On the simulated clock a worker's compute runs beside its averaging (the paper's separate
communication thread): the gradient is charged to a compute stream (:meth:`GossipExchange.begin
<commlab.decentral.architecture.GossipExchange.begin>`); a pairing leaves when the gradient is
ready, and answering a neighbour's pairing does not wait for the compute. Wire per pairing:
the model each way (4 d bytes on fp32), one pairing per worker step plus those it answers.

The History's step k is every worker's k-th step (loss, bytes, its clock in ``worker_time``);
the consensus distance and the evaluated average model at step k are those of the workers'
models when half of them had applied k steps (their planned times), taken from snapshots kept
after every step (steps x d floats per worker) and combined after the run, off the record.
"""
from __future__ import annotations

import math

import torch

from ..flat import flatten, unflatten_into
from ..history import Diverged
from .base import Decentralized
from .pairing import median_ends, pairings, state_at


class ADPSGD(Decentralized):
    """``adpsgd``: each worker computes a gradient, averages with one random neighbour, then applies it
    (Lian et al. 2018); the pairings are planned for the whole run before any rank starts."""
    name = "adpsgd"

    def __init__(self):
        super().__init__()
        self.steps = None
        self.queue = None  # this worker's remaining events
        self.g = None  # the gradient waiting to be applied
        self.ends = None
        self.snapshots = []

    def start(self, steps: int) -> None:
        """Take the run's number of steps (the pairings are planned for all of them)."""
        self.steps = steps

    def _plan(self, worker) -> None:
        comm, ex, c = worker.comm, worker.exchange, worker.config
        net = comm.clock.network if comm.clock is not None else None
        flops = worker.flops_per_sample * c.batch_size
        nbytes = 4 * sum(p.numel() for p in worker.model.parameters() if p.requires_grad)
        if net is not None and net.flops:
            compute = lambda w, k: flops / net.flops * net.slowdown_of(w, k - 1)  # noqa: E731
            message = lambda a, b: net.message_time(a, b, nbytes)  # noqa: E731
        else:  # no timing model: every step takes the same time, messages none
            compute, message = (lambda w, k: 1.0), (lambda a, b: 0.0)
        events, self.ends = pairings(ex.topology.neighbors, self.steps, compute, message, c.seed)
        self.queue = list(reversed(events[comm.rank]))
        ex.own_compute = True
        self.snapshots = [self.flat(worker)]

    @staticmethod
    def _params(worker):
        return [p for p in worker.model.parameters() if p.requires_grad]

    def flat(self, worker) -> torch.Tensor:
        """This worker's trainable parameters as one flat vector."""
        return flatten(p.detach() for p in self._params(worker))

    def _run(self, worker, until_apply: bool) -> float | None:
        """Run this worker's events up to its next apply (or all that are left); the loss."""
        comm, ex, loss = worker.comm, worker.exchange, None
        while self.queue:
            kind, arg = self.queue.pop()
            if kind == "grad":
                loss = worker.gradient()
                self.g = [p.grad.detach().clone() for p in self._params(worker)]
                if not math.isfinite(loss):
                    raise Diverged(self.name, arg, comm.rank, f"loss {loss}; lower lr")
            elif kind == "pair":
                ex.catch_up()
                x = self.flat(worker)
                work = comm.isend(x, arg, PAIR_TAG)
                self._set(worker, (x + comm.recv(arg, PAIR_TAG)) / 2)
                work.wait()
            elif kind == "serve":
                x = self.flat(worker)
                theirs = comm.recv(arg, PAIR_TAG)
                comm.isend(x, arg, PAIR_TAG).wait()
                self._set(worker, (x + theirs) / 2)
            else:  # apply
                ex.catch_up()
                x, g = self.flat(worker), flatten(self.g)
                self._set(worker, x - self.sgd(worker, x, g))
                self.snapshots.append(self.flat(worker))
                if until_apply:
                    return loss
        return loss

    def _set(self, worker, flat) -> None:
        with torch.no_grad():
            unflatten_into(flat, self._params(worker))

    def round(self, worker) -> dict:
        """Run this worker's events (gradients, pairwise averagings) up to its next applied step."""
        if self.steps is None:
            raise ValueError("adpsgd plans its pairings for the whole run: the Trainer calls start(steps) first")
        if self.queue is None:
            self._plan(worker)
        self.t += 1
        return {"loss": self._run(worker, until_apply=True), "consensus": math.nan}

    def finish(self, worker) -> list[dict]:
        """Answer the pairings left after this worker's last step, then measure, off the record:
        per step k, the planned time, the consensus distance and the average model (see the doc)."""
        self._run(worker, until_apply=False)
        times = median_ends(self.ends)
        counts = state_at(self.ends, times)  # per step, per worker: steps applied by then
        mine = torch.stack([self.snapshots[row[worker.comm.rank]] for row in counts]).double()
        n = worker.comm.world_size
        means = worker.comm.unrecorded_all_reduce(mine.clone(), "sum") / n
        dist = worker.comm.unrecorded_all_reduce((mine - means).pow(2).sum(1), "sum") / n
        return [{"time": t, "consensus": float(d), "average": m.float()} for t, d, m in zip(times, dist, means)]


PAIR_TAG = 29
