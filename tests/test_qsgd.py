"""QSGD: unbiased, within its variance bound, exact wire sizes for both codings."""
import math

import pytest
import torch
from compress_cases import assert_refuses_nonfinite, assert_round_trips, assert_unbiased, header, sample

from commlab.compress import get
from commlab.compress.coding import gamma_length
from commlab.compress.qsgd import QSGD, qsgd_nbytes


@pytest.mark.parametrize("levels,bucket", [(1, 40), (4, 8), (16, 20)])
def test_unbiased(levels, bucket):
    assert_unbiased(QSGD(levels, bucket, seed=1), sample((40,)), 20000, batched=True)


def test_unbiased_over_calls():
    assert_unbiased(QSGD(2, 512, seed=1), sample((20,)), 300)


@pytest.mark.parametrize("levels,bucket", [(1, 64), (2, 64), (8, 64), (64, 64), (4, 1000)])
def test_variance_within_bound(levels, bucket):
    c = QSGD(levels, bucket, seed=2)
    x = sample((300,), 3)
    d = c(x.repeat(400)).double().view(400, -1) if 300 % bucket == 0 else \
        torch.stack([c(x).double() for _ in range(100)])
    var = float((d - x.double()).pow(2).sum(1).mean())
    bound = 0.0
    for v in x.double().split(bucket):  # the paper's bound bucket by bucket
        bound += min(v.numel() / levels ** 2, math.sqrt(v.numel()) / levels) * float(v.pow(2).sum())
    assert var <= bound * 1.05, (var, bound)
    assert c.variance_bound(x) >= bound * 0.999


@pytest.mark.parametrize("shape,levels,bucket", [((1000,), 16, 512), ((7, 13), 3, 10), ((5,), 255, 2),
                                                 ((2, 3, 4), 1, 512)])
def test_packed_bytes_are_the_formula(shape, levels, bucket):
    p = QSGD(levels, bucket).compress(sample(shape))
    d = math.prod(shape)
    k = 1 + math.ceil(math.log2(levels + 1))
    want = header(shape, ["norms", "codes"]) + 4 * math.ceil(d / bucket) + math.ceil(d * k / 8)
    assert p.nbytes == want == qsgd_nbytes(shape, levels, bucket)


def test_elias_bytes_and_same_values_as_packed():
    x = sample((5000,), 4)
    packed, elias = QSGD(4, 512, seed=5), QSGD(4, 512, coding="elias", seed=5)
    pe = elias.compress(x)
    assert torch.equal(packed(x), elias.decompress(pe))  # same seed: same levels, other code
    lv = QSGD(4, 512, seed=5).quantize(x)[1].long()
    nz = int((lv > 0).sum())
    want = header((5000,), ["norms", "levels", "signs"]) + 4 * 10 + math.ceil(gamma_length(lv + 1) / 8) \
        + math.ceil(nz / 8)
    assert pe.nbytes == want
    assert pe.nbytes < QSGD(4, 512).compress(x).nbytes  # small s: most levels are 0 or 1


@pytest.mark.parametrize("coding", ["packed", "elias"])
def test_round_trips_and_refusals(coding):
    assert_round_trips(QSGD(coding=coding))
    assert_refuses_nonfinite(QSGD(coding=coding))


def test_zero_and_empty():
    c = QSGD()
    assert torch.equal(c(torch.zeros(10)), torch.zeros(10))
    assert c(torch.zeros(0)).shape == (0,)


def test_seeded_runs_repeat():
    x = sample((100,))
    a, b = QSGD(seed=3), QSGD(seed=3)
    assert torch.equal(a(x), b(x)) and torch.equal(a(x), b(x))
    assert not torch.equal(QSGD(seed=4)(x), QSGD(seed=3)(x))


@pytest.mark.parametrize("spec,message", [
    ("qsgd(levels=0)", r"qsgd: levels=0 is out of range; valid: an integer in 1..1048576"),
    ("qsgd(bucket=0)", r"qsgd: bucket=0 is out of range; valid: an integer >= 1"),
    ("qsgd(coding='zip')", r"qsgd: coding='zip' is not known; valid: packed, elias"),
    ("qsgd(levels=2.5)", r"levels=2.5"),
])
def test_bad_parameters(spec, message):
    with pytest.raises(ValueError, match=message):
        get(spec)


def test_registry_spec():
    c = get("qsgd(levels=16, bucket=512)")
    assert (c.levels, c.bucket, c.unbiased, c.aggregation) == (16, 512, True, "gather")
