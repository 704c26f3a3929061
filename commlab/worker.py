"""One rank's side of data-parallel training, as a synchronizer sees it (see :mod:`commlab.train`)."""
from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from . import data as data_pkg


class Worker:
    """One rank's side of data-parallel training, as a synchronizer sees it: each step the
    Trainer calls ``sync.round(worker)``, which may call ``worker.gradient()`` (one mini-batch:
    forward, backward, compute on the clock) as often as it likes, talk over ``worker.comm``
    and return {"loss": ...} (NaN if this worker did not train), optionally "staleness" and
    "samples"."""

    def __init__(self, comm, c, ds, shard, flops_per_sample, network, model, optimizer, arch,
                 compressor, client=None):
        self.comm, self.config, self.network = comm, c, network
        self.model, self.optimizer, self.arch, self.compressor, self.client = model, optimizer, arch, compressor, client
        self.flops_per_sample, self.shard_size = flops_per_sample, len(shard)
        self.batches = data_pkg.batches(ds.x_train, ds.y_train, shard, c.batch_size, seed=c.seed + comm.rank)

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
        start = time.perf_counter()
        loss = F.cross_entropy(self.model(x.to(comm.device)), y.to(comm.device))
        self.optimizer.zero_grad(set_to_none=False)
        loss.backward()
        if self.network is not None and comm.backend != "threads" and comm.clock is not None:
            factor = self.network.slowdown_of(comm.rank, comm.clock.computes)
            if factor > 1:
                time.sleep((factor - 1) * (time.perf_counter() - start))
        comm.compute(flops=self.flops_per_sample * len(y))
        return loss.item()
