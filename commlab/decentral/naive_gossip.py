"""Naive compressed gossip: compress the models themselves (the baseline that Tang et al.,
"Communication compression for decentralized training", NeurIPS 2018, warn against)::

    x_i <- sum_j W_ij C(x_j) - lr g_i(x_i)

Even an unbiased C adds noise proportional to ||x_j||, the size of the model, at every step;
that noise does not shrink as training converges (the models do not go to zero), and the
mixing keeps adding it, so the models never settle: the loss stalls at a level set by the
compression error, or the run diverges. Compare DCD, ECD and CHOCO, which compress changes or
differences that do shrink. Wire: one payload per step to each neighbour.
"""
from __future__ import annotations

from .base import Decentralized


class NaiveGossip(Decentralized):
    """``naive_gossip``: mix the compressed models themselves (the baseline Tang et al. 2018 warn against)."""
    name = "naive_gossip"
    compresses = True

    def update(self, worker, x, g):
        """sum_j W_ij C(x_j) - lr g_i(x_i), with C(x_i) for this worker's own term."""
        ex = worker.exchange
        own, got = ex.share_compressed(x)
        return ex.mix(own.to(x.dtype), {j: c.to(x.dtype) for j, c in got.items()}) - self.sgd(worker, x, g)
