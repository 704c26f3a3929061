"""One bit per coordinate: signSGD, signum, scaled sign (EF-signSGD) and 1-bit SGD.

* ``signsgd``: C(x) = sign(x) (sign(0) = +1), aggregated by majority vote: the update is
  sign(sum_i sign(x_i)) (a tie gives 0) (Bernstein et al. 2018, "signSGD: Compressed
  Optimisation for Non-Convex Problems"; "signSGD with Majority Vote is Communication Efficient
  and Fault Tolerant", ICLR 2019). Biased; converges when gradient noise is unimodal and
  symmetric, with majority vote giving the variance reduction of N workers.
* ``signum(momentum=0.9)``: per tensor (``key``) m <- beta m + (1 - beta) g, send sign(m)
  (Bernstein et al. 2018, signum). Majority vote as signSGD.
* ``scaled_sign``: C(x) = (||x||_1 / d) sign(x), a delta-contraction with
  delta = ||x||_1^2 / (d ||x||_2^2): ||C(x) - x||^2 = ||x||^2 - ||x||_1^2 / d. With error
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
"""
from __future__ import annotations

import torch

from . import coding
from .base import Compressor, Payload, check_int, check_number, restore, work
from .error_feedback import ErrorFeedback


def _signs(neg: torch.Tensor) -> torch.Tensor:
    return coding.pack_bits(neg, 1)


def _unsigned(p: Payload) -> torch.Tensor:
    """+1 / -1 from the packed sign bits, in the work precision."""
    neg = coding.unpack_bits(p["signs"], 1, p.numel)
    dtype = torch.float64 if p.dtype == torch.float64 else torch.float32
    return 1 - 2 * neg.to(dtype)


class SignSGD(Compressor):
    """``SignSGD()``: sign(x), one bit per coordinate, majority vote."""

    name = "signsgd"
    aggregation = "majority"

    def __init__(self):
        super().__init__()

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        self.check(t)
        return Payload({"signs": _signs(work(t) < 0)}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        return restore(_unsigned(p), p)


class Signum(SignSGD):
    """``Signum(momentum=0.9)``: sign of the momentum, kept per ``key``."""

    name = "signum"

    def __init__(self, momentum: float = 0.9):
        super().__init__()
        self.momentum = check_number(momentum, self.name, "momentum", 0, 1, high_open=True)
        self.state: dict = {}

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        self.check(t)
        g = work(t)
        m = self.state.get(key)
        m = g.clone().mul_(1 - self.momentum) if m is None or m.shape != g.shape else \
            m.mul_(self.momentum).add_(g, alpha=1 - self.momentum)
        self.state[key] = m
        return Payload({"signs": _signs(m < 0)}, t.shape, t.dtype)

    def reset(self) -> None:
        self.state.clear()


class ScaledSign(Compressor):
    """``ScaledSign()``: (||x||_1 / d) sign(x); with ``+ef`` it is EF-signSGD."""

    name = "scaled_sign"
    aggregation = "gather"

    def __init__(self):
        super().__init__()

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        self.check(t)
        x = work(t)
        scale = x.abs().mean() if x.numel() else x.new_zeros(())
        return Payload({"scale": scale.float().reshape(1), "signs": _signs(x < 0)}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        s = _unsigned(p)
        return restore(s.mul_(p["scale"].to(s.dtype)), p)


class OneBit(Compressor):
    """``OneBit(bucket=512)``: signs, decoded as the bucket's mean of the coordinates of
    that sign. Use with ``+ef``."""

    name = "onebit"
    aggregation = "gather"

    def __init__(self, bucket: int = 512):
        super().__init__()
        self.bucket = check_int(bucket, self.name, "bucket", 1)

    def compress(self, t: torch.Tensor, key=None) -> Payload:
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
        return Payload({"means": means, "signs": _signs(neg.reshape(-1)[:d])}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        d, b = p.numel, self.bucket
        nb = -(-d // b)
        neg = coding.unpack_bits(p["signs"], 1, d).bool()
        if nb * b != d:
            neg = torch.cat([neg, neg.new_zeros(nb * b - d)])
        dtype = torch.float64 if p.dtype == torch.float64 else torch.float32
        means = p["means"].reshape(nb, 2).to(dtype)
        x = torch.where(neg.view(nb, b), means[:, 1:], means[:, :1])
        return restore(x.reshape(-1)[:d], p)


def ef_signsgd() -> ErrorFeedback:
    """EF-signSGD (Karimireddy et al. 2019): scaled sign with error feedback."""
    ef = ErrorFeedback(ScaledSign())
    ef.name = "ef_signsgd"
    return ef
