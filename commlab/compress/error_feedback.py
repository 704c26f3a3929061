"""Error feedback: remember what compression dropped and add it back next time.

With a compressor C and a residual e_t per tensor (e_0 = 0), each call with gradient g_t sends

    p_t = C(e_t + g_t),        e_{t+1} = e_t + g_t - p_t.

The residual telescopes: sum_{t<T} p_t + e_T = sum_{t<T} g_t, so nothing is lost, only
delayed. For a contraction of quality omega, ||C(x) - x||^2 <= (1 - omega) ||x||^2 (top-k:
omega = k/d; scaled sign: omega = ||x||_1^2 / (d ||x||_2^2)), the residual stays bounded by
||e_t||^2 <= 4 (1 - omega) / omega^2 max_s ||g_s||^2, and EF-SGD converges at the rate of SGD
with biased compressors (Karimireddy et al. 2019, "Error Feedback Fixes SignSGD and other
Gradient Compression Schemes"; Stich et al. 2018, "Sparsified SGD with Memory"; first used
with 1-bit SGD by Seide et al. 2014).

``ErrorFeedback(compressor)`` keeps one residual per ``key`` (a parameter's name), so one
wrapper serves every tensor of a model. A parameter server can wrap its own compressor the
same way to compress what it sends back (with its own key, e.g. ``key="server"``).

Aggregation is the inner compressor's. For "sum" compressors the local contribution
``from_summed(summable(x), x, 1)`` is what the residual subtracts; for the others it is
``decompress(compress(x))``. Compressors that aggregate in several rounds (PowerSGD) keep
their own error feedback.

Wire and cost: the inner compressor's payload and collectives; its encode plus, on a GPU, the
bookkeeping (in passes over fp32 x): the check, e + g (3 passes), the local decode, the new
residual x - C(x) (3 passes): 6 passes, 7 launches and 1 sync more than the inner encode, and
the local decode's work ("sum": the summable copied and ``from_summed``).
"""
from __future__ import annotations

import torch

import math

from .base import Compressor, Payload
from .cost import CHECK, Cost, KernelWork


class ErrorFeedback(Compressor):
    """``ErrorFeedback(inner)``: compress e + g with ``inner``, keep the rest in e (per key)."""

    unbiased = False
    remembers_error = True

    def __init__(self, inner: Compressor):
        if not isinstance(inner, Compressor):
            raise TypeError(f"ErrorFeedback wraps a Compressor, got {type(inner).__name__}")
        if isinstance(inner, ErrorFeedback):
            raise ValueError(f"{inner.name} already has error feedback; '+ef' once is enough")
        if inner.no_error_feedback:
            raise ValueError(f"{inner.name} {inner.no_error_feedback}; use '{inner.name}' without '+ef'")
        super().__init__(inner.seed)
        self.inner = inner
        self.name = f"{inner.name}+ef"
        self.aggregation = inner.aggregation
        self.residuals: dict = {}

    def _corrected(self, t: torch.Tensor, key) -> torch.Tensor:
        self.check(t)
        e = self.residuals.get(key)
        if e is None or e.shape != t.shape:
            e = torch.zeros_like(t, dtype=torch.float32 if t.dtype in (torch.float16, torch.bfloat16) else t.dtype)
        return e + t

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """p = C(e + g) with the inner compressor; keeps e <- e + g - p for this key."""
        x = self._corrected(t, key)
        p = self.inner.compress(x.to(t.dtype), key)
        self.residuals[key] = x - self.inner.decompress(p).to(x.dtype)
        p.dtype = t.dtype
        return p

    def decompress(self, p: Payload) -> torch.Tensor:
        """The inner compressor's decompression (the residual stays on the sender)."""
        return self.inner.decompress(p)

    def summable(self, t: torch.Tensor, key=None) -> torch.Tensor:
        """The inner summable of e + g; keeps e <- e + g - (what it contributes) for this key."""
        x = self._corrected(t, key)
        s = self.inner.summable(x.to(t.dtype), key)
        self.residuals[key] = x - self.inner.from_summed(s.clone(), x, 1)
        return s

    def from_summed(self, s: torch.Tensor, like: torch.Tensor, count: int) -> torch.Tensor:
        """The inner compressor's average from the summed tensors."""
        return self.inner.from_summed(s, like, count)

    def combine(self, payloads: list, key=None) -> torch.Tensor:
        """The inner compressor's aggregate of every rank's payload."""
        return self.inner.combine(payloads, key)

    def payload_bytes(self, shape, dtype=torch.float32, **assumed) -> int:
        """The inner compressor's payload (``assumed``: its keywords, e.g. threshold's ``kept``)."""
        return self.inner.payload_bytes(shape, dtype, **assumed)

    def summed_bytes(self, shape, dtype=torch.float32) -> int:
        """The inner compressor's summable tensor."""
        return self.inner.summed_bytes(shape, dtype)

    def wire(self, shape, dtype=torch.float32) -> tuple:
        """The inner compressor's collectives."""
        return self.inner.wire(shape, dtype)

    def cost(self, shape, **assumed) -> Cost:
        """The inner encode, with the residual added before and the local decode subtracted after."""
        inner = self.inner.cost(shape, **assumed)
        if self.aggregation == "sum":  # the residual subtracts from_summed(summable(x).clone(), x, 1)
            d = max(math.prod(shape), 1)
            local = KernelWork(2 * self.inner.summed_bytes(shape) / (4 * d), 1) + inner.decode
        else:
            local = self.inner.decompress_work(shape, **assumed)
        encode = (CHECK  # the check of g
                  + KernelWork(3, 1)  # x = e + g
                  + inner.encode + local  # C(x), and what the others will decode of it
                  + KernelWork(3, 1))  # e = x - C(x)
        return Cost(encode, inner.decode)

    def decompress_work(self, shape, **assumed) -> KernelWork:
        return self.inner.decompress_work(shape, **assumed)

    def combine_work(self, shape, n: int) -> KernelWork:
        return self.inner.combine_work(shape, n)

    def residual(self, key=None) -> torch.Tensor | None:
        """The current residual e for ``key`` (None before the first call)."""
        return self.residuals.get(key)

    def reset(self) -> None:
        """Forget every residual (each key starts again from e = 0)."""
        self.residuals.clear()

    def __repr__(self) -> str:
        """``inner+ef`` as a spec (the inner compressor's arguments shown); a named wrapper
        (``ef_signsgd``) with its inner arguments."""
        inner = repr(self.inner)
        if self.name == f"{self.inner.name}+ef":
            return f"{inner}+ef"
        return self.name + inner[len(self.inner.name):]
