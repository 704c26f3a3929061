"""DCD-PSGD: decentralized SGD with difference compression (Tang, Gan, Zhang, Zhang and Liu,
"Communication compression for decentralized training", NeurIPS 2018, Algorithm 1).

Every node keeps a replica x_j of each neighbour's model, the same on every holder because
all of them apply the same compressed changes. A step of worker i::

    x_i^(t+1/2) = sum_j W_ij x_j - lr g_i(x_i)        (its own x_i and its replicas)
    z_i = x_i^(t+1/2) - x_i                            the change it wants
    send C(z_i);  every holder of x_i (i itself too) does  x_i <- x_i + C(z_i)

so what travels is the change of a model, which shrinks as training converges, rather than
the model, which does not. With C the identity this is D-PSGD exactly. The paper needs C
unbiased and accurate enough for the graph: its error alpha must stay below a bound set by
the spectral gap; at strong compression (random-k with k/d = 1%, QSGD at 2 bits) the replicas
drift and the run diverges, which is what Koloskova et al. (2020) report and chapter 09 shows.

The models start equal (the Trainer builds every replica from one seed), so the replicas start
as the worker's own x. Wire: one payload per step, sent to each of the d_i neighbours: d_i *
payload.nbytes bytes. Memory: d_i + 1 model copies.
"""
from __future__ import annotations

from .base import Decentralized


class DCDPSGD(Decentralized):
    """``dcd_psgd``: send the compressed change of the model; neighbours' replicas apply it
    (Tang et al. 2018, Algorithm 1)."""
    name = "dcd_psgd"
    compresses = True

    def __init__(self):
        super().__init__()
        self.replicas = None  # {neighbour j: x_j}

    def update(self, worker, x, g):
        """z = sum_j W_ij x_j - lr g - x; share C(z); x and every replica move by the decoded change."""
        ex = worker.exchange
        if self.replicas is None:
            self.replicas = {j: x.clone() for j in ex.neighbors}
        z = ex.mix(x, self.replicas) - self.sgd(worker, x, g) - x
        own, got = ex.share_compressed(z)
        for j, c in got.items():
            self.replicas[j].add_(c.to(x.dtype))
        return x + own.to(x.dtype)
