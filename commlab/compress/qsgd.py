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
for small s relative to sqrt(b)). ``coding="bytes"``: norms, then every coordinate's sign times
its level as one integer, int8 for s <= 127, int16 for s <= 32767 (int32 above): ``header +
4 ceil(d / b) + d`` bytes (2 d, 4 d). GRACE (Xu et al., ICDCS 2021) sends QSGD so (int8 below 128
levels, 16 bits from there), with one norm per tensor: any ``bucket >= d`` is that (one bucket,
one norm; ``qsgd(levels=127, bucket=1099511627776, coding='bytes')`` for every tensor). It is
for a simulator of GRACE's traffic: 8 bits where packing needs 1 + ceil(log2(s + 1)).
Aggregation "gather": levels of different norms cannot be added in compressed form.

Cost (packed): bucket norms, |x| scaled per bucket, one uniform draw per coordinate (the bulk
of the time), codes 2 l + sign as uint8, packed as 64-bit words
(:func:`~commlab.compress.bitpack.pack_bits`); decompress unpacks and looks up +-l / s in a
table of 2^k entries. Elias coding runs on numpy over the whole stream and is several times
slower. Bytes: the levels cast to the integer, negated where x < 0 (a negation and a select);
decompress casts them back and divides by s (no table).

Declared (:meth:`QSGD.payload_bytes`, :meth:`QSGD.cost`): packed sizes are exact; an Elias
payload depends on the levels drawn, given as ``level_counts`` (how many coordinates got each
level 0..s) or, by default, expected for Gaussian coordinates (:func:`rounded_levels`). On a GPU,
packed (s = 16, 6-bit codes): the bucket norms and their check, the scaled |x|, the draw, floor
and clamp, codes, packing: 24 passes, 34 launches, 1 sync; decode: unpacking and a lookup in a
table of 2^k values, 13 passes, 25 launches. Elias runs on the host by design: the levels go to
numpy and back (syncs), and its coding costs about as much as 150 passes over the host's memory
to encode, 250 to decode (``host``, measured against a numpy copy).

Randomness: call t draws from (seed, t); give ranks different seeds for independent noise.
"""
from __future__ import annotations

import math

import torch

from . import coding
from . import cost as costs
from .base import Compressor, Payload, check_int, check_levels, header_bytes, restore, work
from .cost import FINITE, Cost, KernelWork, tiny
from .sparse import positions

CODINGS = ("packed", "elias", "bytes")


class QSGD(Compressor):
    """``QSGD(levels=16, bucket=512, coding="packed", seed=0)``."""

    name = "qsgd"
    shown = (("levels", 16), ("bucket", 512), ("coding", "packed"))
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
        self.signed = torch.int8 if levels <= 127 else torch.int16 if levels <= 32767 else torch.int32  # "bytes"

    def theta(self, shape) -> float:
        """The variance factor of Lemma 3.1 (theta in the book's notation) for a tensor of ``shape``:
        E ||Q(x) - x||^2 <= theta ||x||^2, theta = min(b / s^2, sqrt(b) / s) with b the bucket (or
        the whole tensor, if smaller)."""
        b, s = min(self.bucket, max(math.prod(shape), 1)), self.levels
        return min(b / s ** 2, b ** 0.5 / s)

    def variance_bound(self, t: torch.Tensor) -> float:
        """theta ||v||^2 summed over the buckets of t."""
        return self.theta(t.shape) * float(work(t).double().pow(2).sum())

    def quantize(self, x: torch.Tensor):
        """(norms, levels as floats in 0..s, negative) of a flat work tensor."""
        d, b = x.numel(), self.bucket
        norms = bucket_norms(x, b)
        if not bool(torch.isfinite(norms.float()).all()):  # one check on the norms, not on x
            self.check(x)  # NaN/Inf in x: a clear error
            raise ValueError(f"{self.name}: a bucket norm overflows fp32 (|x| up to {float(x.abs().max()):.3g}); "
                             f"scale the tensor down")
        scale = torch.where(norms > 0, self.levels / norms, torch.zeros_like(norms))
        r = bucket_mul_(x.abs(), b, scale)
        r.add_(torch.rand(d, generator=self.generator(x.device), device=x.device, dtype=x.dtype))
        self.tick()
        return norms, r.floor_().clamp_(max=self.levels), x < 0

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """Bucket norms (fp32) and, per coordinate, the level with its sign: packed fixed-width codes,
        Elias gamma levels with signs for the nonzero ones, or one signed integer each ("bytes")."""
        if not t.is_floating_point():
            self.check(t)
        norms, levels, neg = self.quantize(work(t))
        norms = norms.float()
        if self.coding == "packed":
            codes = levels.to(torch.int32 if self.bits > 8 else torch.uint8)  # integers: exact
            codes.mul_(2).add_(neg.view(torch.uint8))  # level and sign bit in one code
            return Payload({"norms": norms, "codes": coding.pack_bits(codes, self.bits)}, t.shape, t.dtype)
        if self.coding == "bytes":
            signed = levels.to(self.signed)  # integers: exact
            return Payload({"norms": norms, "signed": torch.where(neg, -signed, signed)}, t.shape, t.dtype)
        levels = levels.to(torch.int32)
        data, _ = coding.gamma_encode(levels + 1)
        signs = coding.pack_bits(neg.index_select(0, positions(levels > 0)), 1)
        return Payload({"norms": norms, "levels": data.to(t.device), "signs": signs}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """||v||_2 sign(v_i) l_i / s per bucket, from either coding."""
        d = p.numel
        dtype = torch.float64 if p.dtype == torch.float64 else torch.float32
        norms = p["norms"].to(dtype)
        if "codes" in p.parts:
            table = torch.arange(1 << self.bits, device=norms.device)  # code -> +-level / s
            table = ((table >> 1) * (1 - 2 * (table & 1))).to(dtype) / self.levels
            x = coding.unpack_bits(p["codes"], self.bits, d, table)  # table[code]
        elif "signed" in p.parts:
            x = p["signed"].to(dtype) / self.levels  # the same values as the packed table's
        else:
            levels = coding.gamma_decode(p["levels"], d).to(norms.device) - 1
            x = levels.to(dtype) / self.levels
            nz = positions(levels != 0)
            flip = nz.index_select(0, positions(coding.unpack_signs(p["signs"], nz.numel()).to(nz.device)))
            x.index_copy_(0, flip, x.index_select(0, flip).neg_())
        return restore(bucket_mul_(x, self.bucket, norms), p)

    def payload_bytes(self, shape, dtype=torch.float32, *, level_counts=None) -> int:
        """Exact for packed codes and bytes; Elias: from ``level_counts`` (coordinates at each level
        0..s), else expected for Gaussian coordinates (rounded to whole bytes)."""
        if self.coding == "packed":
            return qsgd_nbytes(shape, self.levels, self.bucket)
        d = math.prod(shape)
        if self.coding == "bytes":
            size = self.signed.itemsize
            return header_bytes(len(shape), ["norms", "signed"]) + 4 * -(-d // self.bucket) + size * d
        if level_counts is None:
            p = rounded_levels(self.levels, self.levels / math.sqrt(min(self.bucket, max(d, 1))), absolute=True)
            level_counts = [d * q for q in p]
        gamma = sum(c * (2 * (l + 1).bit_length() - 1) for l, c in enumerate(level_counts))  # 2 floor(log2(l+1)) + 1
        signs = d - level_counts[0]
        head = header_bytes(len(shape), ["norms", "levels", "signs"]) + 4 * -(-d // self.bucket)
        return head + math.ceil(round(gamma, 6) / 8) + math.ceil(round(signs, 6) / 8)

    def cost(self, shape) -> Cost:
        """Norms, |x| scaled, a draw, floor and clamp; packed codes, signed integers, or Elias codes on the host."""
        d = max(math.prod(shape), 1)
        tail = d % self.bucket != 0
        code = 1 if self.bits <= 8 else 4  # bytes of a code before packing
        quantize = (KernelWork(1, 1) + (tiny(2) if tail else costs.NONE)  # bucket norms (the short last one, cat)
                    + FINITE + tiny(1) + KernelWork(syncs=1)  # all(isfinite(norms)), bool(): the check
                    + tiny(5)  # scale = where(norms > 0, s / norms, 0)
                    + KernelWork(2, 1) + KernelWork(2, 1) + (tiny(1) if tail else costs.NONE)  # |x|, times its bucket's scale
                    + KernelWork(1, 1) + KernelWork(3, 1) + KernelWork(2, 1) + KernelWork(2, 1)  # r += uniform; floor; clamp at s
                    + KernelWork(1.25, 1))  # x < 0
        table = tiny(8) + costs.unpack_codes(self.bits, d, d, table=True)  # code -> +-level / s, looked up
        scale = KernelWork(2, 1) + (tiny(1) if tail else costs.NONE)  # times the bucket norms
        if self.coding == "packed":
            encode = (quantize + KernelWork((4 + code) / 4, 1)  # levels to codes
                      + KernelWork(2 * code / 4, 1) + KernelWork((2 * code + 1) / 4, 1)  # 2 level + sign
                      + costs.pack_codes(self.bits, d, d, code))
            return Cost(encode, table + scale)
        if self.coding == "bytes":
            w = self.signed.itemsize  # bytes of an integer
            encode = (quantize + KernelWork((4 + w) / 4, 1)  # levels to integers
                      + KernelWork(2 * w / 4, 1) + KernelWork((1 + 3 * w) / 4, 1))  # negated; where(x < 0, ...)
            return Cost(encode, KernelWork((w + 4) / 4, 1) + KernelWork(2, 1) + scale)  # to fp32; / s; norms
        nz = 1 - rounded_levels(self.levels, self.levels / math.sqrt(min(self.bucket, d)), absolute=True)[0]
        encode = (quantize + KernelWork(2, 1) + KernelWork(2, 1)  # levels to int32, + 1
                  + KernelWork(1, 1, syncs=2, host=150)  # to the host (and the code back): numpy's Elias gamma
                  + KernelWork(1.25, 1) + KernelWork(0.25 + 2 * nz, 1, syncs=1)  # level > 0, nonzero
                  + KernelWork(2.5 * nz, 1) + costs.pack_codes(1, round(nz * d), d))  # their signs, gathered, packed
        decode = (KernelWork(2, 1, syncs=2, host=250)  # the code to the host, int64 levels back
                  + KernelWork(4, 1) + KernelWork(3, 1) + KernelWork(2, 1)  # - 1; to fp32; / s
                  + KernelWork(2.25, 1) + KernelWork(0.25 + 2 * nz, 1, syncs=1)  # level != 0, nonzero
                  + costs.unpack_signs(round(nz * d), d) + KernelWork(nz * (0.25 + 1), 1, syncs=1)  # their signs, nonzero
                  + KernelWork(nz * 3, 1) + KernelWork(nz * 2, 1) + KernelWork(nz, 1) + KernelWork(nz * 2, 1)  # the negative ones flipped
                  + scale)
        return Cost(encode, decode)


def bucket_norms(x: torch.Tensor, b: int) -> torch.Tensor:
    """The l2 norm of every bucket of b consecutive coordinates (the last may be shorter)."""
    full = x.numel() // b
    norms = torch.linalg.vector_norm(x[:full * b].view(full, b), dim=1)
    if full * b < x.numel():
        norms = torch.cat([norms, torch.linalg.vector_norm(x[full * b:]).reshape(1)])
    return norms


def bucket_mul_(x: torch.Tensor, b: int, s: torch.Tensor) -> torch.Tensor:
    """x *= s[bucket of each coordinate], in place."""
    full = x.numel() // b
    x[:full * b].view(full, b).mul_(s[:full, None])
    if full * b < x.numel():
        x[full * b:].mul_(s[full])
    return x


def coding_bits(levels: int) -> int:
    """Bits of a level in 0..levels: ceil(log2(levels + 1))."""
    return coding.bits_for(levels)


def qsgd_nbytes(shape, levels: int, bucket: int) -> int:
    """Exact payload bytes of packed QSGD (what the tests check against)."""
    d = math.prod(shape)
    k = 1 + coding_bits(levels)
    return header_bytes(len(shape), ["norms", "codes"]) + 4 * (-(-d // bucket)) + -(-d * k // 8)


def rounded_levels(top: int, scale: float, offset: float = 0.0, absolute: bool = False) -> list:
    """The probability of each level 0..top when r = offset + scale z (|z| if ``absolute``), z
    standard normal, clamped to [0, top], is rounded at random to floor(r) or floor(r) + 1 with
    E = r: what a quantizer's levels look like on Gaussian coordinates (an integral on a grid)."""
    z = torch.linspace(-8, 8, 32001, dtype=torch.float64)
    w = torch.exp(-z * z / 2)
    w /= w.sum()
    r = (offset + scale * (z.abs() if absolute else z)).clamp(0, top)
    low = r.floor()
    frac = r - low
    p = torch.zeros(top + 2, dtype=torch.float64)
    p.index_add_(0, low.long(), w * (1 - frac)).index_add_(0, low.long() + 1, w * frac)
    return p[:top + 1].tolist()
