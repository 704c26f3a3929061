"""CHOCO-SGD: decentralized SGD with any contraction compressor (Koloskova, Stich and Jaggi,
"Decentralized stochastic optimization and gossip algorithms with compressed communication",
ICML 2019; Koloskova, Lin, Stich and Jaggi, "Decentralized deep learning with arbitrary
communication compression", ICLR 2020).

Every worker keeps public copies x_hat of itself and of its neighbours, the same on every
holder. A step of worker i, in this order::

    q_i = Q(x_i - x_hat_i);  send q_i;  every holder:  x_hat_i <- x_hat_i + q_i
    x_i <- x_i + gamma sum_j W_ij (x_hat_j - x_hat_i) - lr g_i(x_i)

with the gradient taken at the x_i the step started with, so that, as in D-PSGD, computing it
and communicating can overlap. x_hat_i tracks x_i by compressed corrections whose size shrinks
as x_hat_i catches up (an error feedback of the public copy), so any contraction Q works,
even at 1% of the coordinates, given a consensus step gamma small enough for its omega
(:mod:`commlab.decentral.contraction`). With Q exact and gamma = 1, x_hat = x after the
exchange and the rule is x_i <- sum_j W_ij x_j - lr g_i(x_i): D-PSGD exactly.

How this maps to the papers. Koloskova et al. 2020 (Algorithm 1) write an iteration as:
gossip with the copies of the previous exchange, x <- x + gamma sum_j w_ij (x_hat_j - x_hat_i);
compress and exchange q = Q(x - x_hat); step x <- x - lr g(x). Their first gossip is a no-op
(x_hat starts at 0); after it their sequence is (exchange, step, gossip), (exchange, step,
gossip), ... The step and the gossip both add to the same x (the gossip reads only x_hat, the
gradient is taken before the gossip moves x), so each group is x + gamma (pull) - lr g(x): our
step t is exactly their exchange and step of iteration t-1 with the gossip of iteration t.
Koloskova et al. 2019 put the gradient step first and compress x - lr g - x_hat; with exact Q
and gamma = 1 that is x <- W (x - lr g), not D-PSGD, which is why we follow the 2020 order.

x_hat starts at 0 (as in the papers): the first exchange sends Q(x_0). Wire: one payload of
Q per step to each neighbour, d_i * payload.nbytes. Memory: d_i + 1 public copies.
"""
from __future__ import annotations

import torch

from .. import checks
from .base import Decentralized
from .contraction import contraction


class CHOCO(Decentralized):
    """``choco(gamma=0.4)``: consensus step size gamma in (0, 1]."""

    name = "choco"
    compresses = True

    def __init__(self, gamma: float = 1.0):
        super().__init__()
        if not checks.is_number(gamma) or not 0 < gamma <= 1:
            raise ValueError(f"choco: gamma={gamma!r} is out of range; valid: 0 < gamma <= 1 (the consensus "
                             "step; the papers tune it per compressor, smaller for stronger compression)")
        self.gamma = float(gamma)
        self.public = None  # {j: x_hat_j} for the neighbours and this worker (under its rank)
        self.q = None

    def compressor_for(self, spec):
        """The checked compressor made a contraction (an unbiased one scaled by 1 / (1 + theta))."""
        return contraction(super().compressor_for(spec), spec)

    def update(self, worker, x, g):
        """Share C(x - x_hat_i), update the public copies, x <- x + gamma sum_j W_ij (x_hat_j - x_hat_i)
        minus the SGD step."""
        ex, rank = worker.exchange, worker.comm.rank
        if self.public is None:
            self.public = {j: torch.zeros_like(x) for j in (*ex.neighbors, rank)}
            self.q = contraction(ex.compressor)
        hat = self.public
        own, got = ex.share_compressed(x - hat[rank], compressor=self.q)
        for j, c in {**got, rank: own}.items():
            hat[j].add_(c.to(x.dtype))
        pull = ex.mix(hat[rank], {j: hat[j] for j in ex.neighbors}) - hat[rank]  # sum_j W_ij (x_hat_j - x_hat_i)
        return x + self.gamma * pull - self.sgd(worker, x, g)

    def __repr__(self) -> str:
        return f"CHOCO(gamma={self.gamma:g})"
