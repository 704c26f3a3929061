"""Chapter 06 exercise checks: open, right and wrong answers; they print and never raise."""
import math

import pytest
import torch

from commlab.compress import get
from commlab.chapters.exercises import ch06


# ----------------------------------------------------------------------------- exercises 1 and 2
def test_qsgd_bytes_is_what_the_library_sends(capsys):
    c = ch06.QSGD_BYTES
    d, s, b = c["d"], c["levels"], c["bucket"]
    mine = 30 + 4 * math.ceil(d / b) + math.ceil(d * (1 + math.ceil(math.log2(s + 1))) / 8)
    sent = get(f"qsgd(levels={s}, bucket={b})").compress(torch.ones(d)).nbytes
    assert mine == sent
    assert ch06.check_qsgd_bytes(mine) is True
    assert "correct" in " ".join(capsys.readouterr().out.split())
    assert ch06.check_qsgd_bytes(mine - 30) is False       # the header counts
    assert ch06.check_qsgd_bytes(None) is False
    assert "not answered yet" in " ".join(capsys.readouterr().out.split())


def test_qsgd_bound(capsys):
    c = ch06.QSGD_BOUND
    d, s = c["d"], c["levels"]
    assert ch06.qsgd_bound(d, s) == pytest.approx(min(d / s ** 2, math.sqrt(d) / s))
    assert ch06.check_qsgd_bound(min(d / s ** 2, math.sqrt(d) / s)) is True
    assert ch06.check_qsgd_bound(d / s ** 2) is False       # the other branch of the min
    assert ch06.check_qsgd_bound("two") is False
    assert "expected a number" in " ".join(capsys.readouterr().out.split())


def test_qsgd_safe_levels(capsys):
    d = ch06.QSGD_BOUND["d"]
    assert ch06.qsgd_bound(d, 100) == pytest.approx(1.0) and ch06.qsgd_bound(d, 101) < 1  # sqrt(d) = 100
    assert ch06.check_qsgd_safe_levels(101) is True
    assert ch06.check_qsgd_safe_levels(100) is False  # theta = 1 there: not below the signal
    assert ch06.check_qsgd_safe_levels(None) is False
    assert "not answered yet" in " ".join(capsys.readouterr().out.split())


# ----------------------------------------------------------------------------- exercise 3
def stochastic_sign(x, generator):
    """+-max|x|, +max with probability (1 + x/max) / 2: unbiased, one bit."""
    m = x.abs().max()
    if m == 0:
        return torch.zeros_like(x)
    up = torch.rand(x.shape, generator=generator) < (x / m + 1) / 2
    return torch.where(up, m, -m)


def min_max_rounding(x, generator):
    """Stochastic rounding to the two levels min(x) and max(x): unbiased, one bit."""
    lo, hi = x.min(), x.max()
    if hi == lo:
        return x.clone()
    up = torch.rand(x.shape, generator=generator) < (x - lo) / (hi - lo)
    return torch.where(up, hi, lo)


def scaled_sign(x, generator):
    return x.abs().mean() * torch.sign(x)


def off_by_a_bit(x, generator):
    """+-max|x| with a slightly wrong probability: biased by 2% of max|x|."""
    m = x.abs().max()
    up = torch.rand(x.shape, generator=generator) < (x / m + 1) / 2 + 0.01
    return torch.where(up, m, -m)


def global_rng(x, generator):
    m = x.abs().max()
    up = torch.rand(x.shape) < (x / m + 1) / 2
    return torch.where(up, m, -m)


def identity(x, generator):
    return x.clone()


def three_levels(x, generator):
    """TernGrad: unbiased but ternary."""
    m = x.abs().max()
    keep = torch.rand(x.shape, generator=generator) < x.abs() / m
    return m * torch.sign(x) * keep


def raising(x, generator):
    raise RuntimeError("oops")


@pytest.mark.parametrize("fn", [stochastic_sign, min_max_rounding])
def test_unbiased_one_bit_quantizers_pass(fn, capsys):
    assert ch06.check_unbiased(fn) is True
    assert "correct" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("fn,says", [
    (scaled_sign, "biased"),
    (off_by_a_bit, "standard errors away"),
    (global_rng, "draw all randomness from the generator"),
    (identity, "1 bit per coordinate allows two"),
    (three_levels, "1 bit per coordinate allows two"),
    (raising, "oops"),
])
def test_other_functions_fail_with_a_reason(fn, says, capsys):
    assert ch06.check_unbiased(fn) is False
    assert says in " ".join(capsys.readouterr().out.split())


def test_open(capsys):
    assert ch06.check_unbiased(None) is False
    assert "not answered yet" in " ".join(capsys.readouterr().out.split())
