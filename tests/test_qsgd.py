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
    ("qsgd(coding='zip')", r"qsgd: coding='zip' is not known; valid: packed, elias, bytes"),
    ("qsgd(levels=2.5)", r"levels=2.5"),
])
def test_bad_parameters(spec, message):
    with pytest.raises(ValueError, match=message):
        get(spec)


def test_registry_spec():
    c = get("qsgd(levels=16, bucket=512)")
    assert (c.levels, c.bucket, c.unbiased, c.aggregation) == (16, 512, True, "gather")


@pytest.mark.parametrize("levels,dtype", [(1, torch.int8), (127, torch.int8), (128, torch.int16),
                                          (300, torch.int16), (32767, torch.int16), (32768, torch.int32)])
def test_bytes_coding_one_signed_integer_per_coordinate(levels, dtype):
    """GRACE's coding: sign times level as int8 (s <= 127) or int16, the bucket norms, the same values."""
    for shape, bucket in [((1000,), 512), ((7, 13), 10), ((5,), 2), ((2048, 3), 1099511627776)]:
        x, d = sample(shape, 6), math.prod(shape)
        c = get(f"qsgd(levels={levels}, bucket={bucket}, coding='bytes', seed=5)")
        p = c.compress(x)
        signed = p["signed"]
        assert signed.dtype == dtype and signed.numel() == d and int(signed.abs().max()) <= levels
        assert bool((signed.view(shape) * torch.sign(x) >= 0).all())
        assert p["norms"].numel() == -(-d // bucket)  # a bucket >= d: one norm for the tensor, as GRACE's
        want = header(shape, ["norms", "signed"]) + 4 * -(-d // bucket) + dtype.itemsize * d
        assert p.nbytes == p.to_bytes().numel() == c.payload_bytes(shape) == want
        assert c.wire(shape) == (("allgather", want),)
        assert torch.equal(c.decompress(p), QSGD(levels, bucket, seed=5)(x))  # same seed: the packed values


@pytest.mark.parametrize("levels,bucket", [(1, 40), (127, 8), (300, 20)])
def test_bytes_coding_unbiased_round_trips_and_refusals(levels, bucket):
    c = QSGD(levels, bucket, coding="bytes", seed=1)
    assert_unbiased(c, sample((40,)), 20000, batched=True)
    assert_round_trips(QSGD(levels, bucket, coding="bytes"))
    assert_refuses_nonfinite(QSGD(levels, bucket, coding="bytes"))
    assert torch.equal(c(torch.zeros(10)), torch.zeros(10)) and c(torch.zeros(0)).shape == (0,)
    k = get("qsgd", levels=levels, bucket=bucket, coding="bytes")  # the keyword form builds the same
    assert (k.levels, k.bucket, k.coding) == (levels, bucket, "bytes")
