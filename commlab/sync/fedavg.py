"""Federated averaging (McMahan et al., "Communication-efficient learning of deep networks
from decentralized data", AISTATS 2017), with compressed uploads (FedPAQ: Reisizadeh et al.,
"FedPAQ: A Communication-Efficient Federated Learning Method with Periodic Averaging and
Quantization", AISTATS 2020).

Every round r the server (rank 0, which is also a client) picks m = max(1, round(C W)) of the
W clients at random (seeded by the run's seed and r, the same choice on every rank), and::

    send     x_r to each chosen client k
    train    client k: E epochs of SGD over its n_k samples (or ``local_steps`` mini-batches),
             starting from x_r, giving x_k
    average  x_{r+1} = sum_k n_k x_k / sum_k n_k                         (over the chosen clients)

With a compressor Q (``Trainer(sync="fedavg(...)", compress="qsgd(levels=16)")``) each chosen
client uploads its model update compressed, as one payload of the whole flat update (the
Trainer's ``compress_per="bucket"``, the default; "+ef" keeps one residual) or layer by layer
(``compress_per="tensor"``: one payload per parameter tensor, keyed by its index, a residual per
layer), and the server adds the weighted mean of the decoded updates::

    upload   Q(x_k - x_r)                                               (FedPAQ)
    average  x_{r+1} = x_r + sum_k n_k Q(x_k - x_r) / sum_k n_k

For an unbiased Q (QSGD, natural compression, rand-k) x_{r+1} is unbiased for the FedAvg
average; FedPAQ bounds the extra error by Q's variance over m n_k-weighted clients. The server
compresses its own update too when it is chosen (nothing crosses the wire for it), so every
client is treated alike. Compressors that vote (signSGD, signum), keep state in their
aggregation (DIANA, LAQ) or aggregate by an all-reduce protocol of their own (PowerSGD,
gTop-k, TernGrad's shared scaler; as over a parameter server) are refused by the rulebook
(:mod:`commlab.rules`: FedAvg declares ``decodes = "weighted"``).

Communication is the star of a federated system, whatever ``arch`` is. Per round, with D
parameters (fp32) and m' = the chosen clients other than the server:

* down: the server sends x_r to each of them, 4 D bytes each (never compressed, as in FedPAQ);
* up, uncompressed: x_k with n_k appended as one more fp32 value, 4 (D + 1) bytes;
* up, compressed: n_k as one int32 message (4 bytes), then the payload of the update
  ``payload.to_bytes()`` as a uint8 message (per layer: one message each): 4 + nbytes(Q(update))
  bytes, e.g. about D/2 + 4 D/512 for qsgd(levels=4) (4 bits a value: its sign and a level in
  0..4; an fp32 norm per 512 values) or 6 D/10 for topk(0.1) on at most 65536 values (2-byte
  position + 4-byte value), plus a header per payload.

Clients that sit out send nothing. With C = 1, one local step and equal shards, FedAvg is
BSP. On non-IID shards (``split="dirichlet"``) the local models drift apart as E grows (Zhao
et al. 2018, Li et al. 2020). Client optimizers restart every round.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .. import checks
from ..compress.base import Payload
from ..flat import flatten, unflatten_into
from .base import Synchronizer

FEDAVG_TAG = 31


class FedAvg(Synchronizer):
    """``fedavg(fraction=1.0, epochs=1, local_steps=None)``: per round, chosen clients train locally and the
    server (rank 0) averages their models weighted by shard size; compressed uploads are FedPAQ."""
    name = "fedavg"
    # it talks client-server over comm itself (rank 0 is the server), which decodes each upload alone
    # and weights it by the client's shard size (FedPAQ's compressed uploads)
    needs, takes_arch, decodes = frozenset(), False, "weighted"
    compresses_per = ("bucket", "tensor")  # one payload of the whole update, or one per layer

    def __init__(self, fraction: float = 1.0, epochs: int = 1, local_steps: int | None = None):
        if not 0 < fraction <= 1:
            raise ValueError(f"fraction (of clients per round) must be in (0, 1], got {fraction!r}")
        checks.integer("epochs", epochs, got=True)
        if local_steps is not None and (not checks.is_int(local_steps) or local_steps < 1):
            raise ValueError(f"local_steps must be None (use epochs) or an integer >= 1, got {local_steps!r}")
        self.fraction, self.epochs, self.local_steps = fraction, epochs, local_steps
        self.rounds = 0

    def chosen(self, round_index: int, clients: int, seed: int) -> list[int]:
        """The clients of a round: the same on every rank."""
        m = max(1, round(self.fraction * clients))
        return sorted(int(k) for k in np.random.default_rng([seed, round_index]).choice(clients, m, replace=False))

    def round(self, worker) -> dict:
        """One round: send x_r to the chosen clients, local SGD on each, weighted average at rank 0."""
        comm, model, c = worker.comm, worker.model, worker.config
        params = [p for p in model.parameters() if p.requires_grad]
        chosen = self.chosen(self.rounds, comm.world_size, c.seed)
        self.rounds += 1
        me = comm.rank
        start = None  # x_r, which a compressed upload is relative to
        with torch.no_grad():  # 1. the server sends the global model to the chosen clients
            if me == 0:
                x = flatten(p.detach() for p in params)
                for work in [comm.isend(x, k, FEDAVG_TAG) for k in chosen if k != 0]:
                    work.wait()
                start = x
            elif me in chosen:
                start = comm.recv(0, FEDAVG_TAG)
                unflatten_into(start, params)
        losses = []
        if me in chosen:  # 2. local training
            worker.optimizer.state.clear()
            steps = self.local_steps or self.epochs * math.ceil(worker.shard_size / c.batch_size)
            for _ in range(steps):
                losses.append(worker.gradient())
                worker.optimizer.step()
        with torch.no_grad():  # 3. weighted average at the server
            if worker.compressor is None:
                self._average(comm, params, chosen, float(worker.shard_size))
            else:
                self._average_updates(comm, params, chosen, worker.shard_size, worker.compressor, start,
                                      c.compress_per)
        # E epochs use every sample of the shard E times (each pass ends with its short batch);
        # local_steps counts full batches (a short one at the end of a pass is counted full)
        used = (self.epochs * worker.shard_size if self.local_steps is None else len(losses) * c.batch_size)
        return {"loss": sum(losses) / len(losses) if losses else math.nan,
                "samples": used if losses else 0}

    @staticmethod
    def _average(comm, params, chosen, n: float) -> None:
        """Uncompressed: clients send n_k x_k with n_k appended; x <- sum n_k x_k / sum n_k."""
        me = comm.rank
        mine = torch.cat([flatten(p.detach() for p in params) * n, torch.tensor([n])])
        if me != 0 and me in chosen:
            comm.send(mine, 0, FEDAVG_TAG)
        elif me == 0:
            total = mine if 0 in chosen else torch.zeros_like(mine)
            for k in chosen:
                if k != 0:
                    total += comm.recv(k, FEDAVG_TAG)
            unflatten_into(total[:-1] / total[-1], params)

    @staticmethod
    def _average_updates(comm, params, chosen, n: int, compressor, start, per: str) -> None:
        """FedPAQ: clients send n_k (int32) and Q(x_k - x_r), the whole update as one payload
        (``per="bucket"``, keyed "fused") or layer by layer (``"tensor"``, keyed by the layer's
        index); the server sets x <- x_r + sum n_k Q(x_k - x_r) / sum n_k."""
        me = comm.rank
        if me not in chosen and me != 0:
            return
        if per == "tensor":
            keys, starts, now = range(len(params)), _split(start, params), [p.detach() for p in params]
        else:
            keys, starts, now = ["fused"], [start], [flatten(p.detach() for p in params)]
        if me in chosen:
            payloads = [compressor.compress(x - s, key=j) for j, x, s in zip(keys, now, starts)]
        if me != 0:
            works = [comm.isend(torch.tensor([n], dtype=torch.int32), 0, FEDAVG_TAG)]
            works += [comm.isend(p.to_bytes(), 0, FEDAVG_TAG) for p in payloads]
            for work in works:
                work.wait()
            return
        total = [torch.zeros_like(s, dtype=torch.float32) for s in starts]
        weight = 0
        for k in chosen:
            if k == 0:
                nk, got = n, payloads
            else:
                nk = int(comm.recv(k, FEDAVG_TAG)[0])
                got = [Payload.from_bytes(comm.recv(k, FEDAVG_TAG)) for _ in starts]
            weight += nk
            for t, p in zip(total, got):
                t.add_(compressor.decompress(p).float().reshape(t.shape), alpha=nk)
        unflatten_into(flatten(s.float() + t / weight for s, t in zip(starts, total)), params)

    def __repr__(self) -> str:
        local = f"local_steps={self.local_steps}" if self.local_steps else f"epochs={self.epochs}"
        return f"FedAvg(fraction={self.fraction}, {local})"


def _split(flat: torch.Tensor, params) -> list[torch.Tensor]:
    """Views of ``flat`` shaped like each parameter in turn."""
    out, offset = [], 0
    for p in params:
        out.append(flat[offset:offset + p.numel()].view_as(p))
        offset += p.numel()
    return out
