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
"""
from __future__ import annotations

import math

import torch

from .base import FLOAT_DTYPES, Compressor, Payload, check_number, header_bytes
from .sparse import check_sparse, densify, positions, sparse_nbytes, sparse_payload


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
        return Payload({"idx": words, "tau": torch.tensor([self.tau], dtype=t.dtype, device=t.device)}, t.shape, t.dtype)

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

    def wire_bytes(self, shape, nnz: int, dtype=torch.float32) -> int:
        """Exact payload size when ``nnz`` coordinates of a tensor of ``shape`` pass the threshold."""
        if not self.signs:
            return sparse_nbytes(tuple(shape), nnz, dtype)
        word = torch.empty((), dtype=signed_index_dtype(math.prod(shape))).element_size()
        return header_bytes(len(shape), ["idx", "tau"]) + nnz * word + torch.empty((), dtype=dtype).element_size()

    def __repr__(self) -> str:
        return f"threshold({self.tau:g}{', signs=True' if self.signs else ''})"
