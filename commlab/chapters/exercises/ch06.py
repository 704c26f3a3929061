"""Exercises of chapter 06: quantization."""
from __future__ import annotations

import math

import torch

from ...compress.qsgd import QSGD, qsgd_nbytes
from . import check_function, check_number

# the settings the exercises name
QSGD_BYTES = dict(d=1_000_000, levels=16, bucket=512)  # exercise 1: a 1-D tensor of d fp32 values
QSGD_BOUND = dict(d=10_000, levels=50)                  # exercise 2: one bucket holding all d values
SAFE_BELOW = 1.0                                        # exercise 2, second part: theta below the signal
DRAWS = 4000                                            # exercise 3: calls per test vector
Z_LIMIT = 5.5                                           # exercise 3: largest |z| a fair coordinate may show


def check_qsgd_bytes(answer) -> bool:
    """Exercise 1: payload bytes of packed QSGD with s = 16 levels and buckets of U = 512 on a
    1-D tensor of D = 10^6 values, header included (what ``Payload.nbytes`` reports)."""
    c = QSGD_BYTES
    want = qsgd_nbytes((c["d"],), c["levels"], c["bucket"])
    return check_number("QSGD payload bytes", answer, want, rel=0.0,
                        hint="A 30-byte header (parts \"norms\" and \"codes\"), a fp32 norm per bucket, and "
                             "1 + ceil(log2(s + 1)) bits per value, packed into whole bytes.")


def qsgd_bound(d: int, levels: int) -> float:
    """QSGD's bound on E ||Q(v) - v||^2 / ||v||^2 for one bucket of d values: min(d/s^2, sqrt(d)/s)."""
    return QSGD(levels, d).variance_bound(torch.ones(d, dtype=torch.float64)) / d


def check_qsgd_bound(answer) -> bool:
    """Exercise 2: QSGD's variance bound, E ||Q(v) - v||^2 <= theta ||v||^2: the value of theta
    for s = 50 levels and one bucket of d = 10,000 values."""
    c = QSGD_BOUND
    return check_number("QSGD variance bound theta", answer, qsgd_bound(c["d"], c["levels"]), rel=1e-6,
                        hint="Lemma 3.1 of the QSGD paper with the bucket b = d: which branch of the "
                             "minimum is smaller?")


def check_qsgd_safe_levels(answer) -> bool:
    """Exercise 2, second part: the smallest number of levels s for which QSGD's bound on one
    bucket of d = 10,000 values promises an error below the signal, theta < 1."""
    d = QSGD_BOUND["d"]
    want = next(s for s in range(1, d + 2) if qsgd_bound(d, s) < SAFE_BELOW)
    return check_number("fewest levels with theta < 1", answer, want, rel=0.0,
                        hint="Both branches of min(d/s^2, sqrt(d)/s) fall as s grows; at s = 50 the "
                             "second is the smaller. Where does the smaller one drop below 1?")


def _vectors() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(6)
    return [torch.randn(40, generator=g),
            torch.tensor([0.0, 1.0, -1.0, 0.5, -0.25, 3.0, -3.0, 1e-3]),
            torch.rand(30, generator=g) * 1e-3,   # small and all positive
            torch.full((5,), 2.0)]


def _trial(fn):
    for k, x in enumerate(_vectors()):
        where = f"on test vector {k} ({x.numel()} values)"
        outs = []
        for t in range(DRAWS):
            y = fn(x.clone(), torch.Generator().manual_seed(1000 * k + t))
            assert isinstance(y, torch.Tensor), f"{where}: returned {type(y).__name__}, not a tensor"
            assert y.shape == x.shape, f"{where}: returned shape {tuple(y.shape)}, expected {tuple(x.shape)}"
            y = y.double()
            assert bool(torch.isfinite(y).all()), f"{where}: returned NaN or Inf"
            assert torch.unique(y).numel() <= 2, (f"{where}: one call returned {torch.unique(y).numel()} "
                                                  f"different values; 1 bit per coordinate allows two")
            outs.append(y)
            if t == 0:
                again = fn(x.clone(), torch.Generator().manual_seed(1000 * k)).double()
                assert torch.equal(again, y), ("two calls with equally seeded generators differ: draw all "
                                               "randomness from the generator you are given")
        ys = torch.stack(outs)
        mean, sd = ys.mean(0), ys.std(0)
        x64 = x.double()
        fixed = sd == 0
        wrong = fixed & ((mean - x64).abs() > 1e-6 * (1 + x64.abs()))
        assert not bool(wrong.any()), (f"{where}: coordinate {int(wrong.nonzero()[0])} is always "
                                       f"{float(mean[wrong][0]):.4g} but x is {float(x64[wrong][0]):.4g}: biased")
        z = ((mean - x64) / (sd / math.sqrt(DRAWS))).masked_fill(fixed, 0.0).abs()
        assert float(z.max()) <= Z_LIMIT, (f"{where}: coordinate {int(z.argmax())}: the mean of {DRAWS} draws is "
                                           f"{float(mean[z.argmax()]):.4g}, x is {float(x64[z.argmax()]):.4g} "
                                           f"({float(z.max()):.1f} standard errors away): biased")


def check_unbiased(fn) -> bool:
    """Exercise 3: ``fn(x, generator)`` is a stochastic 1-bit quantizer: it returns a tensor of
    x's shape taking at most two distinct values (each coordinate is one of two levels, so one
    bit per coordinate plus the two levels), draws its randomness only from ``generator``, and
    is unbiased: E[fn(x)] = x. Tested on four vectors with 4000 independently seeded calls
    each: every coordinate's mean must lie within 5.5 standard errors of x."""
    return check_function("unbiased 1-bit quantizer", fn, _trial)
