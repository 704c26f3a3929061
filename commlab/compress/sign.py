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

Wire (``coding="packed"``, the default): signs packed 8 per byte (1 = negative):
``header + ceil(d / 8)`` bytes for signsgd and signum; + 4 bytes (the fp32 scale) for
scaled_sign; + 8 bytes per bucket (two fp32 means) for onebit. ``coding="bytes"`` sends the
same signs unpacked, one torch.bool per coordinate (``header + d`` bytes, plus the same scale or
means; ``ef_signsgd(coding="bytes")`` too): what GRACE (Xu et al., ICDCS 2021) sends for its
signSGD, signum, EF-signSGD and 1-bit SGD, eight times the packed signs, for a simulator that
models GRACE's traffic. Both codings decode to the same values.

Cost (d coordinates): compress is one comparison and numpy's ``packbits`` on the CPU, one fused
multiply-and-sum of the signs into bytes on a GPU (:func:`~commlab.compress.bitpack.pack_signs`;
nothing leaves the device), plus the NaN/Inf check (a sum of x; for
scaled_sign the mean |x| doubles as the check); decompress writes the output in one pass,
looking up 8 values (+-1 or +-scale) per byte. On a GPU (``cost``, in passes over fp32 x):
signsgd encodes in 3.5 passes, 9 launches, 1 sync and decodes in 2 passes, 6 launches; signum
adds its momentum (5 passes, 2 launches); scaled_sign's mean |x| (3 passes) replaces the check
(1); onebit's per-bucket means cost 4.5 passes and 13 small launches more. With
``coding="bytes"`` the packing and unpacking drop out: encode writes the bools x < 0 (1.25
passes, 1 launch; for onebit they are already there), decode selects from them (1.25 passes).
"""
from __future__ import annotations

import math

import torch

from .. import checks
from . import coding
from . import cost as costs
from .base import FLOAT_DTYPES, Compressor, Payload, check_int, check_number, header_bytes, restore, work
from .cost import CHECK, FINITE, Cost, KernelWork, tiny
from .error_feedback import ErrorFeedback


CODINGS = ("packed", "bytes")


def _coding(who: str, value) -> str:
    """The ``coding`` argument, if it is one of :data:`CODINGS`, else ValueError."""
    return checks.choice("coding", value, CODINGS, where=who)


def _signs(x: torch.Tensor, packed: bool) -> torch.Tensor:
    """The "signs" part of x < 0 (x floats, or those bools already): packed 8 per byte, or one
    bool per coordinate."""
    if x.dtype == torch.bool:
        return coding.pack_bits(x, 1) if packed else x
    return coding.pack_signs(x) if packed else x.detach() < 0


def _negative(p: Payload) -> torch.Tensor:
    """The bools x < 0 of a payload's "signs", either coding (a bool part is already unpacked)."""
    signs = p["signs"]
    return signs if signs.dtype == torch.bool else coding.unpack_signs(signs, p.numel).to(signs.device)


def _unsigned(p: Payload, scale=1.0) -> torch.Tensor:
    """-scale where the sign is negative, else +scale, in the work precision: packed, one lookup
    of 8 values per byte; bools, one select (one pass writing the output either way)."""
    dtype = torch.float64 if p.dtype == torch.float64 else torch.float32
    s = scale.to(dtype) if isinstance(scale, torch.Tensor) else \
        torch.full((), scale, dtype=dtype, device=p["signs"].device)  # a fill kernel, not a copy from the host
    table = torch.stack([s, -s])
    if p["signs"].dtype == torch.bool:
        return torch.where(p["signs"], table[1], table[0])
    return coding.unpack_signs(p["signs"], p.numel, table)


def _signs_bytes(shape, packed: bool, *parts) -> int:
    """Header (the ``parts`` of fp32 scalars and "signs") and one bit (packed) or byte per coordinate."""
    d = math.prod(shape)
    return header_bytes(len(shape), [*parts, "signs"]) + (-(-d // 8) if packed else d)


def _signs_work(d: int, packed: bool, floats: bool = True) -> KernelWork:
    """:func:`_signs`: x < 0 from floats (unless they are bools already), then packed or not."""
    compare = KernelWork(1.25, 1) if floats else costs.NONE
    return compare + costs.pack_codes(1, d, d) if packed else compare


def _unsigned_work(d: int, scalars: int, packed: bool) -> KernelWork:
    """:func:`_unsigned`: the two-entry table (``scalars`` tiny kernels), the bits if packed, one select."""
    return tiny(scalars) + (costs.unpack_signs(d, d, table=True) if packed else KernelWork(1.25, 1))


class SignSGD(Compressor):
    """``SignSGD(coding="packed")``: sign(x), one bit (or, "bytes", one bool) per coordinate, majority vote."""

    name = "signsgd"
    shown = (("coding", "packed"),)
    aggregation = "majority"

    def __init__(self, coding: str = "packed"):
        super().__init__()
        self.coding = _coding(self.name, coding)

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """sign(x), packed at one bit per coordinate or one bool each."""
        self.check(t)
        return Payload({"signs": _signs(work(t), self.coding == "packed")}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """+1 / -1 per coordinate from the signs."""
        return restore(_unsigned(p), p)

    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """The header and ceil(d / 8) bytes of signs (d with "bytes")."""
        return _signs_bytes(shape, self.coding == "packed")

    def cost(self, shape) -> Cost:
        """Check, x < 0 (packed); decode: the table [1, -1] (fill, neg, stack) and one select per sign."""
        d, packed = max(math.prod(shape), 1), self.coding == "packed"
        return Cost(CHECK + self._momentum_work() + _signs_work(d, packed), _unsigned_work(d, 3, packed))

    def _momentum_work(self) -> KernelWork:
        return costs.NONE


class Signum(SignSGD):
    """``Signum(momentum=0.9, coding="packed")``: sign of the momentum, kept per ``key``."""

    name = "signum"
    shown = (("momentum", 0.9), ("coding", "packed"))

    def __init__(self, momentum: float = 0.9, coding: str = "packed"):
        super().__init__(coding)
        self.momentum = check_number(momentum, self.name, "momentum", 0, 1, high_open=True)
        self.state: dict = {}

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """m <- beta m + (1 - beta) g for this key; sign(m), packed or one bool per coordinate."""
        self.check(t)
        g = work(t)
        m = self.state.get(key)
        m = g.clone().mul_(1 - self.momentum) if m is None or m.shape != g.shape else \
            m.mul_(self.momentum).add_(g, alpha=1 - self.momentum)
        self.state[key] = m
        return Payload({"signs": _signs(m, self.coding == "packed")}, t.shape, t.dtype)

    def _momentum_work(self) -> KernelWork:
        return KernelWork(2, 1) + KernelWork(3, 1)  # m *= beta; m += (1 - beta) g (a round with a buffer)

    def reset(self) -> None:
        """Forget every momentum buffer."""
        self.state.clear()


class ScaledSign(Compressor):
    """``ScaledSign(coding="packed")``: (||x||_1 / d) sign(x); with ``+ef`` it is EF-signSGD."""

    name = "scaled_sign"
    shown = (("coding", "packed"),)
    contraction = True  # omega = ||x||_1^2 / (d ||x||_2^2)
    aggregation = "gather"

    def __init__(self, coding: str = "packed"):
        super().__init__()
        self.coding = _coding(self.name, coding)

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """The scale ||x||_1 / d (fp32) and sign(x), packed or one bool per coordinate."""
        if not isinstance(t, torch.Tensor) or t.dtype not in FLOAT_DTYPES:
            self.check(t)  # the TypeError
        x = work(t)
        scale = x.abs().mean() if x.numel() else x.new_zeros(())
        if not bool(torch.isfinite(scale)):  # NaN/Inf in x reach the mean: only then check x itself
            self.check(t)
        signs = _signs(x, self.coding == "packed")
        return Payload({"scale": scale.float().reshape(1), "signs": signs}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """scale * sign(x) per coordinate."""
        return restore(_unsigned(p, p["scale"].reshape(())), p)

    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """The header, the fp32 scale and ceil(d / 8) bytes of signs (d with "bytes")."""
        return _signs_bytes(shape, self.coding == "packed", "scale") + 4

    def cost(self, shape) -> Cost:
        """Mean |x| (it doubles as the check), x < 0 (packed); decode: the table [s, -s], one select per sign."""
        d, packed = max(math.prod(shape), 1), self.coding == "packed"
        encode = (KernelWork(2, 1) + KernelWork(1, 1)  # |x|, its mean
                  + FINITE + KernelWork(syncs=1)  # isfinite(scale), bool()
                  + _signs_work(d, packed))
        return Cost(encode, _unsigned_work(d, 2, packed))


class OneBit(Compressor):
    """``OneBit(bucket=512, coding="packed")``: signs, decoded as the bucket's mean of the
    coordinates of that sign. Use with ``+ef``."""

    name = "onebit"
    shown = (("bucket", 512), ("coding", "packed"))
    aggregation = "gather"

    def __init__(self, bucket: int = 512, coding: str = "packed"):
        super().__init__()
        self.bucket = check_int(bucket, self.name, "bucket", 1)
        self.coding = _coding(self.name, coding)

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """Per bucket the mean of its positive and of its negative coordinates (fp32), and one sign each."""
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
        return Payload({"means": means, "signs": _signs(neg.reshape(-1)[:d], self.coding == "packed")}, t.shape,
                       t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """Each coordinate becomes its bucket's positive or negative mean, by its sign."""
        d, b = p.numel, self.bucket
        nb = -(-d // b)
        neg = _negative(p)
        if nb * b != d:
            neg = torch.cat([neg, neg.new_zeros(nb * b - d)])
        dtype = torch.float64 if p.dtype == torch.float64 else torch.float32
        means = p["means"].reshape(nb, 2).to(dtype)
        x = torch.where(neg.view(nb, b), means[:, 1:], means[:, :1])
        return restore(x.reshape(-1)[:d], p)

    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """The header, two fp32 means per bucket and ceil(d / 8) bytes of signs (d with "bytes")."""
        return _signs_bytes(shape, self.coding == "packed", "means") + 8 * -(-math.prod(shape) // self.bucket)

    def cost(self, shape) -> Cost:
        """Per bucket: its signs, their count, the sums of its negative and of all coordinates, two means."""
        d, packed = max(math.prod(shape), 1), self.coding == "packed"
        pad = -d % self.bucket
        encode = (CHECK
                  + (KernelWork(2, 2) if pad else costs.NONE)  # zero padding to whole buckets (new_zeros, cat)
                  + KernelWork(1.25, 1)  # neg = v < 0
                  + KernelWork(0.25, 1)  # negatives per bucket: a sum over the bools
                  + tiny(3)  # positives = b - negatives, the padding taken off the last bucket's
                  + KernelWork(2.25, 1) + KernelWork(1, 1)  # where(neg, v, 0), its sum per bucket
                  + KernelWork(1, 1)  # the sum of each bucket
                  + tiny(6)  # positive sums, clamps, divisions, the stacked means
                  + _signs_work(d, packed, floats=False))  # the sign bits, if packed
        decode = ((costs.unpack_signs(d, d) if packed else costs.NONE)  # the bits as bools
                  + (KernelWork(0.5, 2) if pad else costs.NONE)  # padded to whole buckets
                  + KernelWork(1.25, 1))  # where(neg, negative mean, positive mean)
        return Cost(encode, decode)


def ef_signsgd(coding: str = "packed") -> ErrorFeedback:
    """EF-signSGD (Karimireddy et al. 2019): scaled sign (its ``coding``) with error feedback."""
    ef = ErrorFeedback(ScaledSign(coding))
    ef.name = "ef_signsgd"
    return ef
