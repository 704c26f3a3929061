"""QSGD: stochastic quantization to s levels per bucket (Alistarh et al. 2017, "QSGD:
Communication-Efficient SGD via Gradient Quantization and Encoding").

The vector is cut into buckets of b coordinates (the last one shorter). In a bucket v,

    Q(v)_i = ||v||_2 * sign(v_i) * l_i / s,   l_i = floor(r_i) + Bernoulli(r_i - floor(r_i)),
    r_i = s |v_i| / ||v||_2,

so l_i is in 0..s and E[Q(v)] = v (unbiased). Variance (Lemma 3.1 of the paper, per bucket):

    E ||Q(v) - v||^2 <= min(b / s^2, sqrt(b) / s) ||v||^2.

Wire (``coding="packed"``): each bucket's norm as fp32, and per coordinate its sign and level
in k = 1 + ceil(log2(s + 1)) bits, packed: ``header + 4 ceil(d / b) + ceil(d k / 8)`` bytes.
``coding="elias"``: norms, then every level l_i coded as Elias gamma of l_i + 1 (a zero level
costs 1 bit), then one sign bit per nonzero level (the paper codes nonzero positions and
levels with Elias codes; this variable-length code wins when most levels are 0 or 1, i.e.
for small s relative to sqrt(b)). Aggregation "gather": levels of different norms cannot be
added in compressed form.

Randomness: call t draws from (seed, t); give ranks different seeds for independent noise.
"""
from __future__ import annotations

import torch

from . import coding
from .base import Compressor, Payload, check_int, check_levels, restore, work

CODINGS = ("packed", "elias")


class QSGD(Compressor):
    """``QSGD(levels=16, bucket=512, coding="packed", seed=0)``."""

    name = "qsgd"
    unbiased = True
    aggregation = "gather"

    def __init__(self, levels: int = 16, bucket: int = 512, coding: str = "packed", seed: int = 0):
        super().__init__(seed)
        self.levels = check_levels(levels, self.name, 2 ** 20)
        self.bucket = check_int(bucket, self.name, "bucket", 1)
        if coding not in CODINGS:
            raise ValueError(f"{self.name}: coding={coding!r} is not known; valid: {', '.join(CODINGS)}")
        self.coding = coding
        self.bits = 1 + coding_bits(levels)

    def variance_bound(self, t: torch.Tensor) -> float:
        """min(b / s^2, sqrt(b) / s) ||v||^2 summed over the buckets of t."""
        b, s = min(self.bucket, t.numel()), self.levels
        return min(b / s ** 2, b ** 0.5 / s) * float(work(t).double().pow(2).sum())

    def quantize(self, x: torch.Tensor):
        """(norms, levels, negative) of a flat work tensor: levels int in 0..s."""
        d, b = x.numel(), self.bucket
        nb = -(-d // b)
        padded = x if nb * b == d else torch.cat([x, x.new_zeros(nb * b - d)])
        v = padded.view(nb, b)
        norms = torch.linalg.vector_norm(v, dim=1)
        scale = torch.where(norms > 0, self.levels / norms, torch.zeros_like(norms))
        r = v.abs().mul_(scale[:, None]).reshape(-1)[:d]
        r.add_(torch.rand(d, generator=self.generator(x.device), device=x.device, dtype=x.dtype))
        levels = r.floor_().clamp_(max=self.levels).to(torch.int32)
        self.tick()
        return norms, levels, x < 0

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        self.check(t)
        norms, levels, neg = self.quantize(work(t))
        norms = norms.float()
        if self.coding == "packed":
            codes = levels * 2 + neg
            return Payload({"norms": norms, "codes": coding.pack_bits(codes, self.bits)}, t.shape, t.dtype)
        data, _ = coding.gamma_encode(levels + 1)
        signs = coding.pack_bits(neg[levels > 0], 1)
        return Payload({"norms": norms, "levels": data.to(t.device), "signs": signs}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        d = p.numel
        norms = p["norms"]
        if "codes" in p.parts:
            codes = coding.unpack_bits(p["codes"], self.bits, d)
            levels, neg = codes >> 1, (codes & 1).bool()
        else:
            levels = coding.gamma_decode(p["levels"], d).to(norms.device) - 1
            nz = levels > 0
            neg = torch.zeros(d, dtype=torch.bool, device=norms.device)
            neg[nz] = coding.unpack_bits(p["signs"], 1, int(nz.sum())).bool()
        dtype = torch.float64 if p.dtype == torch.float64 else torch.float32
        scale = (norms.to(dtype) / self.levels).repeat_interleave(self.bucket)[:d]
        x = levels.to(dtype).mul_(scale)
        x = torch.where(neg, -x, x)
        return restore(x, p)


def coding_bits(levels: int) -> int:
    """Bits of a level in 0..levels: ceil(log2(levels + 1))."""
    return coding.bits_for(levels)


def qsgd_nbytes(shape, levels: int, bucket: int) -> int:
    """Exact payload bytes of packed QSGD (what the tests check against)."""
    from .base import header_bytes
    d = 1
    for s in shape:
        d *= s
    k = 1 + coding_bits(levels)
    return header_bytes(len(shape), ["norms", "codes"]) + 4 * (-(-d // bucket)) + -(-d * k // 8)
