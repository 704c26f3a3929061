"""Compressors as contractions, what CHOCO-SGD needs (Koloskova, Stich and Jaggi, ICML 2019,
assumption 1; Koloskova, Lin, Stich and Jaggi, ICLR 2020). In the book's notation
(book/notation.md), a contraction of quality omega::

    E ||Q(x) - x||^2 <= (1 - omega) ||x||^2,      0 < omega <= 1

(the ICLR 2020 paper writes delta for omega; the book keeps delta for a graph's spectral gap).
Top-k (omega = k/d), the sign scaled by the mean magnitude (||x||_1 / d) sign(x) and the
fp16/bf16 casts are contractions as they are (``Compressor.contraction``). An unbiased
compressor of variance theta, E ||C(x) - x||^2 <= theta ||x||^2 (its ``theta(shape)``), is not
(random-k keeps d/k times the values it picks), but scaled by 1 / (1 + theta) it is, with
omega = 1 / (1 + theta):

    E ||C(x)/(1+t) - x||^2 = ||x||^2 (1 - 2/(1+t)) + E||C(x)||^2/(1+t)^2 <= (1 - 1/(1+t)) ||x||^2

Random-k scaled so is random-k without its d/k rescaling; QSGD with s levels and buckets of b
coordinates has theta = min(b/s^2, sqrt(b)/s). This is how the papers use them. Scaling is done
by the receiver, so the payload, and its bytes, are the compressor's own.
"""
from __future__ import annotations

import math

import torch

from ..compress.base import Compressor, Payload


class Scaled(Compressor):
    """``inner`` decoded as C(x) / (1 + theta): an unbiased compressor made a contraction."""

    def __init__(self, inner: Compressor):
        super().__init__(inner.seed)
        self.inner, self.name, self.aggregation = inner, f"{inner.name}/(1+theta)", inner.aggregation
        self.contraction = True

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """The inner compressor's payload, unchanged."""
        return self.inner.compress(t, key)

    def decompress(self, p: Payload) -> torch.Tensor:
        """The inner decoding divided by 1 + theta(shape)."""
        return self.inner.decompress(p) / (1 + self.inner.theta(p.shape))

    def __repr__(self) -> str:
        return f"Scaled({self.inner!r})"


def contraction(compressor: Compressor | None, spec=None) -> Compressor | None:
    """``compressor`` if it is a contraction (None, exact, is one), scaled by 1 / (1 + theta) if it
    is unbiased with a known variance theta; otherwise a ValueError naming the valid choices."""
    if compressor is None:
        return None
    spec = spec or compressor.name
    if compressor.remembers_error:
        raise ValueError(f"compress={spec!r}: CHOCO keeps its own memory of what it sent (x_hat); drop the '+ef'")
    if compressor.contraction:
        return compressor
    if compressor.unbiased and callable(getattr(compressor, "theta", None)):
        return Scaled(compressor)
    raise ValueError(f"compress={spec!r} is not a contraction (E||Q(x) - x||^2 <= (1 - omega)||x||^2), which "
                     "CHOCO needs; valid: topk, scaled_sign, fp16, bf16, and the unbiased qsgd and randk, "
                     "which CHOCO scales by 1/(1 + theta)")


def omega(compressor: Compressor, x: torch.Tensor, draws: int = 1) -> float:
    """The measured contraction quality omega = 1 - mean ||Q(x) - x||^2 / ||x||^2 over ``draws``
    calls (NaN for x = 0)."""
    err = sum(float((compressor(x) - x).double().pow(2).sum()) for _ in range(draws)) / draws
    norm = float(x.double().pow(2).sum())
    return 1 - err / norm if norm else math.nan
