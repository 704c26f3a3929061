"""Hard-threshold sparsification (Strom 2015, "Scalable Distributed DNN Training Using
Commodity GPU Cloud Computing").

Send every coordinate whose magnitude exceeds a fixed threshold tau:

    C(x)_i = x_i if |x_i| > tau, else 0.

Unlike top-k the number of coordinates sent is not fixed: it follows the gradient's scale
(many early in training, few later), so the payload has a variable size and the receivers
learn it from the message. What is dropped is small coordinate by coordinate:

    ||x - C(x)||_inf <= tau,     ||x - C(x)||^2 <= min(||x||^2, (d - nnz) tau^2),

but the bound is not relative to ||x||, so this is not a contraction: a tensor with every
|x_i| <= tau sends nothing at all. Strom pairs it with a residual (error feedback, ``+ef``):
small coordinates accumulate until they cross tau. Biased; aggregation "gather".

Two wire forms:

* ``signs=False`` (default): the exact values, as :mod:`commlab.compress.sparse` (positions
  + values, ``header + nnz (2 or 4 + value bytes)``).
* ``signs=True``, Strom's own encoding: each kept coordinate is sent as +tau or -tau, and its
  sign rides in the index word: position i goes as i when x_i > 0 and as ~i = -i-1 when
  x_i < 0 (Strom packs a 31-bit index and a sign bit into 32 bits). int16 words for
  d <= 32768, else int32, plus tau itself: ``header (27 bytes for 1-D) + nnz (2 or 4) +
  value bytes``. With error feedback the difference x_i - tau sign(x_i) stays in the residual.

The size depends on the data: :meth:`Threshold.payload_bytes` and :meth:`Threshold.cost` take
``kept``, the coordinates that pass (a count, or a fraction of d), 1% of d by default (:data:`KEPT`,
top-k(0.01)'s density, which a threshold is usually tuned near). On a GPU (``cost``, f = kept / d):
|x|, the comparison, ``nonzero`` (the host learns the count: a sync), gather, the sum of the
kept values (the check: a second sync): 4 + 10 f passes, 11 launches; decode: densify.
"""
from __future__ import annotations

import math

import torch

from .. import checks
from . import cost as costs
from .base import FLOAT_DTYPES, Compressor, Payload, check_number, header_bytes
from .cost import FINITE, Cost, KernelWork, tiny
from .sparse import check_sparse, densify, positions, sparse_nbytes, sparse_payload

KEPT = 0.01  # the fraction of coordinates assumed to pass the threshold when nobody says


def signed_index_dtype(d: int) -> torch.dtype:
    """Word for a position with its sign folded in (i or ~i): 0..d-1 must fit either way."""
    return torch.int16 if d <= 1 << 15 else torch.int32 if d <= 1 << 31 else torch.int64


class Threshold(Compressor):
    """``Threshold(tau, signs=False)``: send the coordinates with |x_i| > tau."""

    name = "threshold"
    unbiased = False
    aggregation = "gather"

    def __init__(self, tau: float = 1e-3, signs: bool = False, seed: int = 0):
        super().__init__(seed)
        self.tau = check_number(tau, self.name, "tau", 0.0, math.inf)
        if not isinstance(signs, bool):
            raise ValueError(f"{self.name}: signs={signs!r} must be True or False")
        self.signs = signs

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """Sparse (idx, val) of the coordinates with |x_i| > tau, or with ``signs``: signed indices
        and tau only."""
        if not isinstance(t, torch.Tensor) or t.dtype not in FLOAT_DTYPES:
            self.check(t)  # the TypeError
        flat = t.detach().reshape(-1)
        # not |x_i| <= tau: |x_i| > tau, and NaN too, so that the sum of the kept values (often
        # far fewer than d) sees every NaN/Inf and replaces the check of all of x
        idx = positions((flat.abs() <= self.tau).logical_not_())
        val = flat.index_select(0, idx)
        if not bool(torch.isfinite(val.sum())):
            self.check(t)
        if not self.signs:
            return sparse_payload(idx, val, t.shape, t.dtype)
        words = torch.where(val > 0, idx, -idx - 1).to(signed_index_dtype(flat.numel()))
        tau = torch.full((1,), self.tau, dtype=t.dtype, device=t.device)  # a fill kernel, not a copy from the host
        return Payload({"idx": words, "tau": tau}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """The dense tensor: the kept values, or +-tau at the signed indices."""
        if "tau" not in p.parts:
            check_sparse(p, self.name)
            return densify(p)
        words = p["idx"].to(torch.int64)
        out = torch.zeros(p.numel, dtype=p.dtype, device=words.device)
        tau = p["tau"].to(p.dtype)
        out[torch.where(words >= 0, words, -words - 1)] = torch.where(words >= 0, tau, -tau)
        return out.view(p.shape)

    def kept_count(self, shape, kept=KEPT) -> int:
        """How many coordinates pass: ``kept`` itself if an integer (at most d), else round(kept d)
        for a fraction 0 <= kept <= 1."""
        d = math.prod(shape)
        if checks.is_int(kept) and kept >= 0:
            return min(kept, d)
        if not checks.is_number(kept) or not 0 <= kept <= 1:
            raise ValueError(f"{self.name}: kept={kept!r} must be a count (an integer >= 0) or a fraction in [0, 1]")
        return round(kept * d)

    def payload_bytes(self, shape, dtype=torch.float32, *, kept=KEPT) -> int:
        """Exact payload size when ``kept`` coordinates (a count, or a fraction of d) pass the threshold."""
        nnz = self.kept_count(shape, kept)
        if not self.signs:
            return sparse_nbytes(tuple(shape), nnz, dtype)
        word = signed_index_dtype(math.prod(shape)).itemsize
        return header_bytes(len(shape), ["idx", "tau"]) + nnz * word + dtype.itemsize

    def cost(self, shape, *, kept=KEPT) -> Cost:
        """|x| > tau, nonzero, gather, the sum of the kept values; with ``signs`` the signed words.
        Decode: densify, or the +-tau values placed at the unsigned words."""
        d, k = max(math.prod(shape), 1), self.kept_count(shape, kept)
        f = k / d
        encode = (KernelWork(2, 1) + KernelWork(1.25, 1) + KernelWork(0.5, 1)  # |x|; <= tau; not (NaN passes)
                  + KernelWork(0.25 + f * 2, 1, syncs=1)  # nonzero: int64 positions, their count to the host
                  + costs.gather(k, d)  # the kept values
                  + KernelWork(f, 1) + FINITE + KernelWork(syncs=1))  # their sum, isfinite, bool(): the check
        if not self.signs:
            return Cost(encode + costs.positions_out(k, d), costs.densify(k, d))
        word = signed_index_dtype(d).itemsize
        encode += (KernelWork(f * 1.25, 1)  # val > 0
                   + KernelWork(f * 8, 2) + KernelWork(f * 6.25, 1)  # -idx - 1 (neg, sub); where(val > 0, idx, ~idx)
                   + KernelWork(f * (8 + word) / 4, 1)  # to the signed word
                   + tiny(1))  # tau, filled on the device
        decode = (KernelWork(f * (word + 8) / 4, 1) + KernelWork(1, 1)  # words to int64; zeros(d)
                  + KernelWork(f * 2.25, 1) + KernelWork(f * 8, 2) + KernelWork(f * 6.25, 1)  # words >= 0; ~words; unsigned positions
                  + KernelWork(f * 2.25, 1) + tiny(1) + KernelWork(f * 1.25, 1)  # words >= 0; -tau; where(.., tau, -tau)
                  + KernelWork(f * 4, 1))  # index_put_ of the values
        return Cost(encode, decode)

    def __repr__(self) -> str:
        return f"threshold({self.tau:g}{', signs=True' if self.signs else ''})"
