"""D-PSGD: decentralized parallel SGD (Lian et al., "Can decentralized algorithms outperform
centralized algorithms? A case study for decentralized parallel stochastic gradient descent",
NeurIPS 2017).

Worker i holds x_i; W is the topology's mixing matrix (:mod:`commlab.decentral.topology`)::

    x_i <- sum_j W_ij x_j - lr g_i(x_i)

Every worker computes its gradient and exchanges its model with its neighbours at the same
time (the gradient is taken at the x_i the step started with, so the two can overlap), and no
worker ever waits for more than its neighbours. The average x_bar moves as minibatch SGD with
the average gradient (W is doubly stochastic), and the models stay within a distance of it
that the spectral gap controls; Lian et al. prove the O(1/sqrt(nT)) rate of centralized SGD
once T is large against n / gap^2.

Wire: each worker sends its whole model to each of its d_i neighbours and receives theirs:
d_i * 4 d bytes each way per step (fp32), whatever n is. Cost of a step on the simulated
clock: max_degree (alpha + 4 d beta) (:func:`commlab.decentral.gossip.cost`), against a ring
all-reduce's 2 (n-1) alpha + 2 (n-1)/n 4 d beta: decentralized wins where latency alpha
dominates (many workers, a slow network with high latency).
"""
from __future__ import annotations

from .base import Decentralized


class DPSGD(Decentralized):
    """``dpsgd``: x_i <- sum_j W_ij x_j - lr g_i(x_i), full models to the neighbours (Lian et al. 2017)."""
    name = "dpsgd"

    def update(self, worker, x, g):
        """Mix with the neighbours' models, then subtract the SGD step."""
        ex = worker.exchange
        return ex.mix(x, ex.share(x)) - self.sgd(worker, x, g)
