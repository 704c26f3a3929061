"""One rank's side of data-parallel training, as a synchronizer sees it (see :mod:`commlab.train`)."""
from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from .flat import flatten, unflatten_into


class Worker:
    """One rank's side of data-parallel training, as a synchronizer sees it: each step the
    Trainer calls ``sync.round(worker)`` (:mod:`commlab.sync.base`), which may call
    ``worker.gradient()`` (one mini-batch: forward, backward, compute on the clock) as often as
    it likes and agree with the others through ``worker.exchange``.

    comm: this rank's Comm; config: the Trainer's options (batch_size, seed, ...); model and
    optimizer: this rank's replica; exchange: the architecture's exchange for this rank;
    batches: an endless iterator of (x, y) mini-batches of ``config.batch_size`` from this
    worker's shard of ``shard_size`` samples; flops_per_sample: training FLOPs per sample,
    charged to the clock."""

    def __init__(self, comm, config, *, model, optimizer, exchange, batches, shard_size: int,
                 flops_per_sample: float):
        self.comm, self.config = comm, config
        self.model, self.optimizer, self.exchange = model, optimizer, exchange
        self.batches, self.shard_size, self.flops_per_sample = batches, shard_size, flops_per_sample

    @property
    def compressor(self):
        """The exchange's compressor (None: uncompressed)."""
        return self.exchange.compressor

    def next_batch(self, batch_size: int | None = None):
        """The next mini-batch of this worker's shard; a larger ``batch_size`` joins batches."""
        if batch_size is None or batch_size == self.config.batch_size:
            return next(self.batches)
        parts, have = [], 0
        while have < batch_size:  # an epoch's short last batch may come in between
            parts.append(next(self.batches))
            have += len(parts[-1][1])
        return torch.cat([p[0] for p in parts])[:batch_size], torch.cat([p[1] for p in parts])[:batch_size]

    def gradient(self, batch_size: int | None = None) -> float:
        """Zero the gradients, compute them on the next mini-batch, charge the compute; the loss.

        A straggler (``Network(slowdown=...)``) is slower on the simulated clock; on Gloo and
        NCCL it also really sleeps (factor - 1) times its measured compute."""
        comm = self.comm
        x, y = self.next_batch(batch_size)
        flops = self.flops_per_sample * len(y)
        clock = comm.clock if comm.backend != "threads" else None  # a straggler really sleeps off threads
        factor = clock.network.slowdown_of(comm.rank, clock.computes) if clock is not None else 1.0
        charged = self.exchange.begin(flops)  # a scheduled exchange charges compute layer by layer
        start = time.perf_counter()
        loss = F.cross_entropy(self.model(x.to(comm.device)), y.to(comm.device))
        self.optimizer.zero_grad(set_to_none=False)
        loss.backward()
        if factor > 1:
            time.sleep((factor - 1) * (time.perf_counter() - start))
        if not charged:
            comm.compute(flops=flops)
        return loss.item()


def evaluate(model, x, y, device, average=None):
    """(accuracy, loss) of ``model`` on (x, y), or of the flat parameters ``average`` loaded into
    it for the measurement (a decentralized run's x_bar), the model's own put back after."""
    if average is not None:
        params = [p for p in model.parameters() if p.requires_grad]
        own = flatten(p.detach() for p in params)
        with torch.no_grad():
            unflatten_into(average.to(own), params)
        try:
            return evaluate(model, x, y, device)
        finally:
            with torch.no_grad():
                unflatten_into(own, params)
    model.eval()
    with torch.no_grad():
        out = model(x.to(device))
        loss = F.cross_entropy(out, y.to(device)).item()
        acc = (out.argmax(1) == y.to(device)).float().mean().item()
    model.train()
    return acc, loss
