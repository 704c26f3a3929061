"""One bit per coordinate: signSGD, signum, scaled sign (EF-signSGD) and 1-bit SGD.

* ``signsgd``: C(x) = sign(x) (sign(0) = +1), aggregated by majority vote: the update is
  sign(sum_i sign(x_i)) (a tie gives 0) (Bernstein et al. 2018, "signSGD: Compressed
  Optimisation for Non-Convex Problems"; "signSGD with Majority Vote is Communication Efficient
  and Fault Tolerant", ICLR 2019). Biased; converges when gradient noise is unimodal and
  symmetric, with majority vote giving the variance reduction of N workers.
* ``signum(momentum=0.9)``: per tensor (``key``) m <- beta m + (1 - beta) g, send sign(m)
  (Bernstein et al. 2018, signum). Majority vote as signSGD.
* ``scaled_sign``: C(x) = (||x||_1 / d) sign(x), a contraction of quality
  omega = ||x||_1^2 / (d ||x||_2^2): ||C(x) - x||^2 = ||x||^2 - ||x||_1^2 / d. With error
  feedback this is EF-signSGD (Karimireddy et al. 2019, "Error Feedback Fixes SignSGD");
  the registry's ``ef_signsgd`` is ``scaled_sign+ef``. Aggregation "gather" (mean).
* ``onebit(bucket=512)``: 1-bit SGD (Seide et al. 2014, "1-Bit Stochastic Gradient Descent
  and its Application to Data-Parallel Distributed Training of Speech DNNs"): per bucket,
  coordinates >= 0 are sent as the mean of the bucket's coordinates >= 0 and the others as
  the mean of the negative ones, which minimises the squared error given the signs. Seide
  reconstructs per matrix column; we use buckets of consecutive coordinates (for a row-major
  matrix with bucket = its row length, per row). Meant for ``onebit+ef``, as in the paper.

Wire: signs packed 8 per byte (1 = negative): ``header + ceil(d / 8)`` bytes for signsgd and
signum; + 4 bytes (the fp32 scale) for scaled_sign; + 8 bytes per bucket (two fp32 means) for
onebit.

Cost (d coordinates): compress is one comparison and numpy's ``packbits`` on the CPU, one fused
multiply-and-sum of the signs into bytes on a GPU (:func:`~commlab.compress.bitpack.pack_signs`;
nothing leaves the device), plus the NaN/Inf check (a sum of x; for
scaled_sign the mean |x| doubles as the check); decompress writes the output in one pass,
looking up 8 values (+-1 or +-scale) per byte. On a GPU (``cost``, in passes over fp32 x):
signsgd encodes in 3.5 passes, 9 launches, 1 sync and decodes in 2 passes, 6 launches; signum
adds its momentum (5 passes, 2 launches); scaled_sign's mean |x| (3 passes) replaces the check
(1); onebit's per-bucket means cost 4.5 passes and 13 small launches more.
"""
from __future__ import annotations

import math

import torch

from . import coding
from . import cost as costs
from .base import FLOAT_DTYPES, Compressor, Payload, check_int, check_number, header_bytes, restore, work
from .cost import CHECK, FINITE, Cost, KernelWork, tiny
from .error_feedback import ErrorFeedback


def _unsigned(p: Payload, scale=1.0) -> torch.Tensor:
    """-scale where the packed sign bit is 1, else +scale, in the work precision: one lookup
    of 8 values per byte (one pass writing the output)."""
    dtype = torch.float64 if p.dtype == torch.float64 else torch.float32
    s = scale.to(dtype) if isinstance(scale, torch.Tensor) else \
        torch.full((), scale, dtype=dtype, device=p["signs"].device)  # a fill kernel, not a copy from the host
    return coding.unpack_signs(p["signs"], p.numel, torch.stack([s, -s]))


def _signs_bytes(shape, *parts) -> int:
    """Header (the ``parts`` of fp32 scalars and "signs") and one bit per coordinate."""
    return header_bytes(len(shape), [*parts, "signs"]) + -(-math.prod(shape) // 8)


def _unsigned_work(d: int, scalars: int) -> KernelWork:
    """:func:`_unsigned`: the two-entry table (``scalars`` tiny kernels), the bits, one select."""
    return tiny(scalars) + costs.unpack_signs(d, d, table=True)


class SignSGD(Compressor):
    """``SignSGD()``: sign(x), one bit per coordinate, majority vote."""

    name = "signsgd"
    aggregation = "majority"

    def __init__(self):
        super().__init__()

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """sign(x) packed at one bit per coordinate."""
        self.check(t)
        return Payload({"signs": coding.pack_signs(work(t))}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """+1 / -1 per coordinate from the packed signs."""
        return restore(_unsigned(p), p)

    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """The header and ceil(d / 8) bytes of signs."""
        return _signs_bytes(shape)

    def cost(self, shape) -> Cost:
        """Check, x < 0 packed; decode: the table [1, -1] (fill, neg, stack) and one select per bit."""
        d = max(math.prod(shape), 1)
        return Cost(CHECK + self._momentum_work() + costs.pack_signs(d, d), _unsigned_work(d, 3))

    def _momentum_work(self) -> KernelWork:
        return costs.NONE


class Signum(SignSGD):
    """``Signum(momentum=0.9)``: sign of the momentum, kept per ``key``."""

    name = "signum"

    def __init__(self, momentum: float = 0.9):
        super().__init__()
        self.momentum = check_number(momentum, self.name, "momentum", 0, 1, high_open=True)
        self.state: dict = {}

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """m <- beta m + (1 - beta) g for this key; sign(m) packed at one bit per coordinate."""
        self.check(t)
        g = work(t)
        m = self.state.get(key)
        m = g.clone().mul_(1 - self.momentum) if m is None or m.shape != g.shape else \
            m.mul_(self.momentum).add_(g, alpha=1 - self.momentum)
        self.state[key] = m
        return Payload({"signs": coding.pack_signs(m)}, t.shape, t.dtype)

    def _momentum_work(self) -> KernelWork:
        return KernelWork(2, 1) + KernelWork(3, 1)  # m *= beta; m += (1 - beta) g (a round with a buffer)

    def reset(self) -> None:
        """Forget every momentum buffer."""
        self.state.clear()


class ScaledSign(Compressor):
    """``ScaledSign()``: (||x||_1 / d) sign(x); with ``+ef`` it is EF-signSGD."""

    name = "scaled_sign"
    contraction = True  # omega = ||x||_1^2 / (d ||x||_2^2)
    aggregation = "gather"

    def __init__(self):
        super().__init__()

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """The scale ||x||_1 / d (fp32) and sign(x) packed at one bit per coordinate."""
        if not isinstance(t, torch.Tensor) or t.dtype not in FLOAT_DTYPES:
            self.check(t)  # the TypeError
        x = work(t)
        scale = x.abs().mean() if x.numel() else x.new_zeros(())
        if not bool(torch.isfinite(scale)):  # NaN/Inf in x reach the mean: only then check x itself
            self.check(t)
        return Payload({"scale": scale.float().reshape(1), "signs": coding.pack_signs(x)}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """scale * sign(x) per coordinate."""
        return restore(_unsigned(p, p["scale"].reshape(())), p)

    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """The header, the fp32 scale and ceil(d / 8) bytes of signs."""
        return _signs_bytes(shape, "scale") + 4

    def cost(self, shape) -> Cost:
        """Mean |x| (it doubles as the check), x < 0 packed; decode: the table [s, -s], one select per bit."""
        d = max(math.prod(shape), 1)
        encode = (KernelWork(2, 1) + KernelWork(1, 1)  # |x|, its mean
                  + FINITE + KernelWork(syncs=1)  # isfinite(scale), bool()
                  + costs.pack_signs(d, d))
        return Cost(encode, _unsigned_work(d, 2))


class OneBit(Compressor):
    """``OneBit(bucket=512)``: signs, decoded as the bucket's mean of the coordinates of
    that sign. Use with ``+ef``."""

    name = "onebit"
    aggregation = "gather"

    def __init__(self, bucket: int = 512):
        super().__init__()
        self.bucket = check_int(bucket, self.name, "bucket", 1)

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """Per bucket the mean of its positive and of its negative coordinates (fp32), and one sign bit each."""
        self.check(t)
        x = work(t)
        d, b = x.numel(), self.bucket
        nb = -(-d // b)
        v = (x if nb * b == d else torch.cat([x, x.new_zeros(nb * b - d)])).view(nb, b)
        neg = v < 0
        nneg = neg.sum(1)
        npos = b - nneg
        if nb:
            npos[-1] -= nb * b - d  # the padding zeros are not coordinates
        sneg = torch.where(neg, v, 0).sum(1)
        spos = v.sum(1) - sneg
        means = torch.stack([spos / npos.clamp(min=1), sneg / nneg.clamp(min=1)], 1).float()
        return Payload({"means": means, "signs": coding.pack_bits(neg.reshape(-1)[:d], 1)}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """Each coordinate becomes its bucket's positive or negative mean, by its sign bit."""
        d, b = p.numel, self.bucket
        nb = -(-d // b)
        neg = coding.unpack_signs(p["signs"], d).to(p["signs"].device)
        if nb * b != d:
            neg = torch.cat([neg, neg.new_zeros(nb * b - d)])
        dtype = torch.float64 if p.dtype == torch.float64 else torch.float32
        means = p["means"].reshape(nb, 2).to(dtype)
        x = torch.where(neg.view(nb, b), means[:, 1:], means[:, :1])
        return restore(x.reshape(-1)[:d], p)

    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """The header, two fp32 means per bucket and ceil(d / 8) bytes of signs."""
        return _signs_bytes(shape, "means") + 8 * -(-math.prod(shape) // self.bucket)

    def cost(self, shape) -> Cost:
        """Per bucket: its signs, their count, the sums of its negative and of all coordinates, two means."""
        d = max(math.prod(shape), 1)
        pad = -d % self.bucket
        encode = (CHECK
                  + (KernelWork(2, 2) if pad else costs.NONE)  # zero padding to whole buckets (new_zeros, cat)
                  + KernelWork(1.25, 1)  # neg = v < 0
                  + KernelWork(0.25, 1)  # negatives per bucket: a sum over the bools
                  + tiny(3)  # positives = b - negatives, the padding taken off the last bucket's
                  + KernelWork(2.25, 1) + KernelWork(1, 1)  # where(neg, v, 0), its sum per bucket
                  + KernelWork(1, 1)  # the sum of each bucket
                  + tiny(6)  # positive sums, clamps, divisions, the stacked means
                  + costs.pack_codes(1, d, d))  # the sign bits
        decode = (costs.unpack_signs(d, d)  # the bits as bools
                  + (KernelWork(0.5, 2) if pad else costs.NONE)  # padded to whole buckets
                  + KernelWork(1.25, 1))  # where(neg, negative mean, positive mean)
        return Cost(encode, decode)


def ef_signsgd() -> ErrorFeedback:
    """EF-signSGD (Karimireddy et al. 2019): scaled sign with error feedback."""
    ef = ErrorFeedback(ScaledSign())
    ef.name = "ef_signsgd"
    return ef
