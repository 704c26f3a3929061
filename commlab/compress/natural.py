"""Natural compression: stochastic rounding to a power of two (Horvath et al. 2019, "Natural
Compression for Distributed Deep Learning").

For x != 0 with 2^a <= |x| < 2^(a+1),

    C(x) = sign(x) 2^a       with probability (2^(a+1) - |x|) / 2^a,
           sign(x) 2^(a+1)   otherwise,

so E[C(x)] = x (unbiased) and E (C(x) - x)^2 = (2^(a+1) - |x|)(|x| - 2^a) <= x^2 / 8:
variance ω = 1/8, i.e. E ||C(x) - x||^2 <= ||x||^2 / 8 (Theorem 1 of the paper). C(0) = 0.

Computed on the fp32 bit pattern: |x| = 2^(e-127) (1 + m / 2^23) with exponent field e and
mantissa m, so rounding up happens with probability m / 2^23 and only the exponent field
remains (e or e + 1; sign and 8 bits: 9 bits per value, as in the paper). The same rule
rounds subnormals to 0 or 2^-126, unbiased too. Values are coded with fp32's exponent:
float64 inputs are first rounded to fp32 (a relative change below 2^-24), a float64 |x|
beyond the fp32 range cannot be sent (ValueError), and 2^128 is replaced by 2^127 (biased,
only for |x| > 2^127).

Wire: exponents as uint8 and signs packed 8 per byte: ``header + d + ceil(d / 8)`` bytes
(= ceil(9 d / 8)). Aggregation "gather".

Cost on a GPU (``cost``): the check, the exponent and mantissa fields (3 integer ops), one
random int32 per coordinate, the comparison and rounding, the byte, the sign bits: 18 passes,
17 launches, 1 sync; decode: the signs and exponents shifted back into fp32 bits, 10 passes,
7 launches.
"""
from __future__ import annotations

import torch

from . import coding
import math

from . import cost as costs
from .base import Compressor, Payload, header_bytes, restore
from .cost import CHECK, Cost, KernelWork


class Natural(Compressor):
    """``Natural(seed=0)``: stochastic rounding to powers of two, 9 bits per coordinate."""

    name = "natural"
    unbiased = True
    aggregation = "gather"

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """Round each |x| to 2^a or 2^(a+1) at random; send the 8-bit exponent and a packed sign bit."""
        self.check(t)
        x = t.reshape(-1).float()
        if t.dtype == torch.float64 and not bool(torch.isfinite(x).all()):
            raise ValueError(f"{self.name}: float64 values beyond the fp32 range (|x| > 3.4e38) cannot be coded")
        bits = x.view(torch.int32)
        exp = (bits >> 23) & 0xFF
        mant = bits & 0x7FFFFF
        draw = torch.randint(0, 1 << 23, (x.numel(),), generator=self.generator(x.device), device=x.device,
                             dtype=torch.int32)
        self.tick()
        exp = (exp + (draw < mant)).clamp_(max=254)
        return Payload({"exp": exp.to(torch.uint8), "signs": coding.pack_bits(bits < 0, 1)}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """sign(x) 2^a rebuilt from the exponent byte and the sign bit (zero mantissa)."""
        neg = coding.unpack_bits(p["signs"], 1, p.numel).to(torch.int32)
        bits = (neg << 31) | (p["exp"].to(torch.int32) << 23)
        return restore(bits.view(torch.float32), p)

    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """The header, one exponent byte and one sign bit per coordinate."""
        d = math.prod(shape)
        return header_bytes(len(shape), ["exp", "signs"]) + d + -(-d // 8)

    def cost(self, shape) -> Cost:
        """Fields of the fp32 bits, a random mantissa to compare with, exponent bytes, packed signs."""
        d = max(math.prod(shape), 1)
        encode = (CHECK
                  + KernelWork(2, 1).repeat(3)  # exponent: bits >> 23, & 0xFF; mantissa: bits & 0x7FFFFF
                  + KernelWork(1, 1)  # one random int32 per coordinate
                  + KernelWork(2.25, 1) + KernelWork(2.25, 1) + KernelWork(2, 1)  # draw < mantissa; exponent + it; clamp_
                  + KernelWork(1.25, 1)  # the exponent to uint8
                  + KernelWork(1.25, 1) + costs.pack_codes(1, d, d))  # bits < 0, packed
        decode = (costs.unpack_codes(1, d, d)  # the sign bits as int32
                  + KernelWork(2, 1) + KernelWork(1.25, 1) + KernelWork(2, 1)  # sign << 31; exponent to int32, << 23
                  + KernelWork(3, 1))  # or: the fp32 bits
        return Cost(encode, decode)
