"""Half-precision casts: send every coordinate as fp16 or bf16 instead of fp32.

    C(x) = round(x) to the nearest fp16 (10-bit mantissa, 5-bit exponent) or bf16 (7-bit
    mantissa, fp32's 8-bit exponent) value.

Relative error per coordinate: |C(x) - x| <= 2^-11 |x| (fp16, normal range) or 2^-8 |x|
(bf16); fp16 flushes |x| < 6e-8 to 0 and cannot hold |x| > 65504: ``compress`` raises
ValueError instead of sending inf. Round-to-nearest is deterministic, so biased (slightly).
Mixed-precision training sends fp16 gradients (Micikevicius et al. 2018, "Mixed Precision
Training"); bf16 (Kalamkar et al. 2019) keeps fp32's range.

Wire: 2 bytes per coordinate + header, ``header_bytes(ndim, ["values"]) + 2 d`` (half of
fp32). Aggregation "sum": the cast values of all ranks are added by the all-reduce in the half
type itself (as NCCL does; the sum of N values can overflow fp16), then divided by N.

Cost: the cast itself plus one sum over the 2-byte result (the NaN/Inf and overflow check);
decompression is one cast back. On a GPU (:meth:`Cast.cost`, passes over fp32 x): encode 2
passes, 6 launches, 1 sync (the check); decode (``from_summed``) 3.5 passes, 2 launches.
"""
from __future__ import annotations

import torch

import math

from .base import FLOAT_DTYPES, Compressor, Payload, header_bytes, restore
from .cost import FINITE, Cost, KernelWork

_MAX = {torch.float16: 65504.0, torch.bfloat16: 3.3895e38}


class Cast(Compressor):
    """Cast to ``dtype`` (torch.float16 or torch.bfloat16) on the wire."""

    unbiased = False
    contraction = True  # relative error 2^-11 (fp16) or 2^-8 (bf16) per coordinate, within range
    aggregation = "sum"

    def __init__(self, dtype=torch.float16):
        super().__init__()
        if dtype not in _MAX:
            raise ValueError(f"cast: dtype={dtype!r} is not supported; valid: torch.float16, torch.bfloat16")
        self.dtype = dtype
        self.name = "fp16" if dtype == torch.float16 else "bf16"

    def _cast(self, t: torch.Tensor) -> torch.Tensor:
        if not isinstance(t, torch.Tensor) or t.dtype not in FLOAT_DTYPES:
            self.check(t)  # the TypeError
        h = t.to(self.dtype)
        # One check, on the cast (half the bytes of fp32 input): NaN/Inf in t stays NaN/Inf in h
        # and an fp16 overflow becomes Inf, so then the sum of h is not finite. A sum that merely
        # overflows is told apart by min and max; only a bad h makes us read t again.
        if h.numel() and not bool(torch.isfinite(h.sum())) and \
                not bool(torch.isfinite(torch.stack(torch.aminmax(h))).all()):
            self.check(t)  # NaN/Inf in t: the base class's error
            if self.dtype == torch.float16:
                big = float(t.abs().max())
                raise ValueError(f"{self.name}: |x| up to {big:.4g} overflows fp16 (max 65504); scale the tensor "
                                 f"(loss scaling) or use bf16")
        return h

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """One part, ``values``: t cast to fp16/bf16, 2 bytes per coordinate."""
        return Payload({"values": self._cast(t)}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """The half-precision values back in the original shape and dtype."""
        return restore(p["values"], p)

    def summable(self, t: torch.Tensor, key=None) -> torch.Tensor:
        """The flat half-precision cast, summed over ranks in the all-reduce."""
        return self._cast(t).reshape(-1)

    def from_summed(self, s: torch.Tensor, like: torch.Tensor, count: int) -> torch.Tensor:
        """The sum of ``count`` ranks' casts divided by count, in fp32, shaped and typed like ``like``."""
        return (s.float() / count).reshape(like.shape).to(like.dtype)

    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """The header and 2 bytes per coordinate."""
        return header_bytes(len(shape), ["values"]) + self.summed_bytes(shape, dtype)

    def summed_bytes(self, shape, dtype=torch.float32) -> int:
        """2 bytes per coordinate: the all-reduce adds the casts."""
        return math.prod(shape) * self.dtype.itemsize

    def cost(self, shape) -> Cost:
        """``summable``: the cast and the check on the half values; ``from_summed``: back to fp32, / N."""
        encode = (KernelWork(1.5, 1)  # fp32 -> half: read 4, write 2 bytes
                  + KernelWork(0.5, 1) + FINITE + KernelWork(syncs=1))  # sum of the half values, isfinite, bool()
        return Cost(encode, KernelWork(1.5, 1) + KernelWork(2, 1))  # the sum to fp32; / N

    def decompress_work(self, shape, **assumed) -> KernelWork:
        """``decompress``: one cast back to fp32."""
        return KernelWork(1.5, 1)


def fp16() -> Cast:
    """The fp16 cast (10-bit mantissa; |x| > 65504 raises ValueError)."""
    return Cast(torch.float16)


def bf16() -> Cast:
    """The bf16 cast (7-bit mantissa, fp32's exponent range)."""
    return Cast(torch.bfloat16)
