"""Stragglers: how much slower each rank computes, step by step.

``Network(slowdown={3: 4.0})`` makes rank 3 four times slower at every step: a persistent
straggler (a slow or shared machine). Stragglers that come and go (garbage collection, a
noisy neighbour, a thermal throttle; Dean et al. 2012, Chen et al. 2016) are a
``Stragglers`` object::

    Network("10GbE", slowdown=Stragglers(prob=0.1, factor=4.0, seed=0))

At its k-th compute call, rank r is slowed by ``factor`` with probability ``prob``, from a
generator seeded by (seed, r, k): the same pattern on every run, runtime and thread
interleaving. ``factor`` may be a pair (low, high) for a factor drawn uniformly from it, and
``ranks`` limits the stragglers to some ranks.
"""
from __future__ import annotations

import numpy as np


class Stragglers:
    """A seeded, per-rank, per-step random slowdown: ``stragglers(rank, k) -> factor >= 1``."""

    def __init__(self, prob: float = 0.1, factor=4.0, seed: int = 0, ranks=None):
        if not 0 <= prob <= 1:
            raise ValueError(f"prob must be a probability in [0, 1], got {prob!r}")
        low, high = (factor, factor) if np.isscalar(factor) else tuple(factor)
        if not 0 < low <= high:
            raise ValueError(f"factor must be > 0 (or a pair low <= high of them), got {factor!r}")
        self.prob, self.low, self.high, self.seed = float(prob), float(low), float(high), int(seed)
        self.ranks = None if ranks is None else frozenset(int(r) for r in ranks)

    def __call__(self, rank: int, k: int) -> float:
        if self.ranks is not None and rank not in self.ranks:
            return 1.0
        u, v = np.random.default_rng([self.seed, rank, k]).random(2)
        return self.low + v * (self.high - self.low) if u < self.prob else 1.0

    def __repr__(self) -> str:
        factor = self.low if self.low == self.high else (self.low, self.high)
        ranks = "" if self.ranks is None else f", ranks={sorted(self.ranks)}"
        return f"Stragglers(prob={self.prob}, factor={factor}, seed={self.seed}{ranks})"
