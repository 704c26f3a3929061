"""DIANA: compress gradient differences against a learned shift (Mishchenko et al. 2019,
"Distributed Learning with Compressed Gradient Differences").

Worker i keeps a shift h_i (per tensor ``key``, h_i = 0 at first); the server, or every rank
after an all-gather, keeps their average h = (1/N) sum_i h_i. Each round, with an unbiased
compressor Q of variance theta (E ||Q(v) - v||^2 <= theta ||v||^2; here QSGD; the paper writes omega):

    worker i:  Delta_i = Q(g_i - h_i),  sends Delta_i,  h_i <- h_i + alpha Delta_i
    aggregate: g = h + (1/N) sum_i Delta_i,  h <- h + alpha (1/N) sum_i Delta_i

so each h_i tracks g_i (and h their mean), E[g_i-estimate] = E[h_i + Delta_i] = g_i (unbiased),
and the compression error E ||Delta_i - (g_i - h_i)||^2 <= theta ||g_i - h_i||^2 shrinks as the
shifts learn the gradients: unlike plain QSGD, the variance vanishes at the optimum (where the
g_i are fixed), which gives linear convergence for strongly convex problems. The paper takes
alpha <= 1 / (theta + 1); ``alpha=None`` picks exactly that for QSGD's
theta = min(b / s^2, sqrt(b) / s).

As a Compressor: ``compress(g, key)`` sends Q(g - h_i) and moves h_i (worker state);
``decompress(p)`` is Delta_i; ``combine(payloads, key)`` is the aggregate above and moves h
(server state; in an all-gather every rank holds the same h). ``__call__`` (compress then
decompress) returns the worker's own estimate h_i + Delta_i (before the shift moves).
Wire: QSGD's payload of the difference. Aggregation "gather". Cost on a GPU (``cost``): QSGD's
encode and decode (the worker moves its shift by what it sent) plus the check, g - h, h + Delta,
h += alpha Delta: 10 passes, 8 launches and 1 sync more; ``combine_work`` adds the server's shift (6 passes, 2 launches).
"""
from __future__ import annotations

import torch

from .base import Compressor, Payload, check_number, work
from .cost import CHECK, Cost, KernelWork
from .qsgd import QSGD


class Diana(Compressor):
    """``Diana(levels=16, bucket=512, alpha=None, seed=0)``."""

    name = "diana"
    keeps_round_state = True  # the server's shift h moves with every aggregate
    no_error_feedback = ("corrects its compression error itself: it compresses g - h and learns the shifts h "
                         "(error feedback on top would count the error twice)")
    unbiased = True
    aggregation = "gather"

    def __init__(self, levels: int = 16, bucket: int = 512, alpha: float | None = None, seed: int = 0):
        super().__init__(seed)
        self.quantizer = QSGD(levels, bucket, seed=seed)
        theta = self.quantizer.theta((bucket,))
        self.theta = theta
        self.alpha = 1 / (theta + 1) if alpha is None else check_number(alpha, self.name, "alpha", 0, 1,
                                                                        low_open=True)
        self.shifts: dict = {}   # worker: h_i per key
        self.server: dict = {}   # aggregate: h per key
        self._estimate = None

    @staticmethod
    def _get(store: dict, key, like: torch.Tensor) -> torch.Tensor:
        h = store.get(key)
        if h is None or h.shape != like.shape:
            h = store[key] = torch.zeros_like(like)
        return h

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """Delta = Q(g - h) (QSGD); the shift moves h <- h + alpha Delta."""
        self.check(t)
        g = work(t)
        h = self._get(self.shifts, key, g)
        p = self.quantizer.compress(g - h)
        p.shape, p.dtype = tuple(t.shape), t.dtype
        delta = work(self.quantizer.decompress(p))
        self._estimate = h + delta
        h.add_(delta, alpha=self.alpha)
        return p

    def decompress(self, p: Payload) -> torch.Tensor:
        """The quantized difference Delta (not the gradient estimate h + Delta)."""
        return self.quantizer.decompress(p)

    def __call__(self, t: torch.Tensor, key=None) -> torch.Tensor:
        self.compress(t, key)
        return self._estimate.reshape(t.shape).to(t.dtype)

    def combine(self, payloads: list, key=None) -> torch.Tensor:
        """g = h + mean of the Delta_i, with the server's shift h <- h + alpha mean (per key)."""
        if not payloads:
            raise ValueError(f"{self.name}: combine needs at least one payload")
        mean = sum(work(self.decoded(p)) for p in payloads) / len(payloads)
        h = self._get(self.server, key, mean)
        g = h + mean
        h.add_(mean, alpha=self.alpha)
        first = payloads[0]
        return g.reshape(first.shape).to(first.dtype)

    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """QSGD's payload of the difference g - h."""
        return self.quantizer.payload_bytes(shape, dtype)

    def cost(self, shape) -> Cost:
        """g - h, QSGD of it and its decoding, the estimate h + Delta, the shift h += alpha Delta."""
        q = self.quantizer.cost(shape)
        encode = (CHECK + KernelWork(3, 1)  # g - h
                  + q.encode + q.decode  # Delta, and what the server will see of it
                  + KernelWork(3, 1) + KernelWork(3, 1))  # h + Delta (the estimate); h += alpha Delta
        return Cost(encode, q.decode)

    def combine_work(self, shape, n: int) -> KernelWork:
        """n decodes summed (0 + the first, then n - 1 adds), / n, g = h + mean, h += alpha mean."""
        return (self.cost(shape).decode.repeat(n) + KernelWork(2, 1) + KernelWork(3, 1).repeat(n - 1) + KernelWork(2, 1)
                + KernelWork(3, 1) + KernelWork(3, 1))

    def shift(self, key=None) -> torch.Tensor | None:
        """This worker's h_i for ``key``."""
        return self.shifts.get(key)

    def reset(self) -> None:
        """Forget the workers' and the server's shifts (h = 0 again)."""
        self.shifts.clear()
        self.server.clear()
