"""ECD-PSGD: decentralized SGD with extrapolation compression (Tang, Gan, Zhang, Zhang and
Liu, "Communication compression for decentralized training", NeurIPS 2018, Algorithm 2).

Every node keeps estimates y_j of its neighbours' models and of its own (what the others hold
of it). A step t = 1, 2, ... of worker i::

    x_i^(t+1) = sum_j W_ij y_j^t - lr g_i(x_i^t)                 (mixing uses the estimates)
    z_i = (1 - t/2) x_i^t + (t/2) x_i^(t+1)                       extrapolate
    send C(z_i);   every holder:  y_i^(t+1) = (1 - 2/t) y_i^t + (2/t) C(z_i)

The estimate is a running average of unbiased, noisy extrapolations: with y^t = x^t and C the
identity, y^(t+1) = x^(t+1) exactly (so ECD equals D-PSGD), and the compression noise in y
decays like 1/t, since each new C(z) enters with weight 2/t. The extrapolation z grows with t,
so at strong compression the noise it carries grows as well: ECD, like DCD, needs a compressor
accurate enough for the graph (Koloskova et al. 2020 see it diverge at high compression).

The models start equal, so every estimate starts as the worker's own x. Wire: one payload
per step to each neighbour, d_i * payload.nbytes. Memory: d_i + 2 model copies.
"""
from __future__ import annotations

from .base import Decentralized


class ECDPSGD(Decentralized):
    """``ecd_psgd``: mix estimates of the neighbours, send a compressed extrapolation
    (Tang et al. 2018, Algorithm 2)."""
    name = "ecd_psgd"
    compresses = True

    def __init__(self):
        super().__init__()
        self.estimates = None  # {j: y_j}, this worker's own estimate under its rank

    def update(self, worker, x, g):
        """x <- sum_j W_ij y_j - lr g; share C(z), z = (1 - t/2) x_t + (t/2) x_(t+1); each y_j moves
        toward it by 2/t."""
        ex, t, rank = worker.exchange, self.t, worker.comm.rank
        if self.estimates is None:
            self.estimates = {j: x.clone() for j in (*ex.neighbors, rank)}
        y = self.estimates
        new = ex.mix(y[rank], {j: y[j] for j in ex.neighbors}) - self.sgd(worker, x, g)
        own, got = ex.share_compressed((1 - t / 2) * x + (t / 2) * new)
        for j, c in {**got, rank: own}.items():
            y[j].mul_(1 - 2 / t).add_(c.to(x.dtype), alpha=2 / t)
        return new
