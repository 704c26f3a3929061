"""Rotated quantization: Hadamard products, unbiased, the log(b)/s^2 error, exact wire sizes."""
import math

import pytest
import torch
from compress_cases import assert_refuses_nonfinite, assert_round_trips, assert_unbiased, header, sample

from commlab.compress import coding, get
from commlab.compress.rotation import Rotated, fwht, hadamard
from commlab.compress.qsgd import QSGD


@pytest.mark.parametrize("b", [1, 2, 8, 32, 128])
def test_fwht_is_the_hadamard_product(b):
    v = sample((3, b), dtype=torch.float64)
    h = hadamard(b, torch.float64)
    assert torch.allclose(fwht(v), v @ h.T)
    assert torch.allclose(h @ h.T, b * torch.eye(b, dtype=torch.float64))


@pytest.mark.parametrize("coding_", ["huffman", "packed"])
def test_unbiased(coding_):
    assert_unbiased(Rotated(levels=4, bucket=16, coding=coding_, seed=1), sample((32,)), 5000, batched=True)


def test_error_bound_and_rotation_helps_on_spiky_vectors():
    x = torch.zeros(1024)
    x[7] = 10.0
    x += 0.01 * sample((1024,))
    rot = Rotated(levels=4, bucket=1024, seed=2)
    d = torch.stack([rot(x).double() for _ in range(50)])
    err = float((d - x.double()).pow(2).sum(1).mean())
    assert err <= rot.error_bound(x)
    # a plain uniform quantizer between min and max (no rotation) is far worse on a spike
    lo, hi = float(x.min()), float(x.max())
    unrotated = 1024 * (hi - lo) ** 2 / (4 * 4 ** 2)
    assert err < unrotated / 10


def test_packed_bytes():
    for shape, bucket, levels in [((1000,), 256, 16), ((3, 5), 8, 3), ((1,), 1, 1)]:
        d = math.prod(shape)
        nb = -(-d // bucket)
        p = Rotated(levels, bucket, coding="packed").compress(sample(shape))
        want = header(shape, ["seed", "range", "levels"]) + 8 + 8 * nb \
            + math.ceil(nb * bucket * coding.bits_for(levels) / 8)
        assert p.nbytes == want


def test_huffman_bytes_are_code_plus_table_and_offsets():
    x = sample((5000,))
    c = Rotated(levels=16, bucket=1024, seed=3)
    p = c.compress(x)
    n = 5 * 1024
    q = coding.huffman_decode(p["code"], p["starts"], p["lengths"].tolist(), n)
    bits = sum(int(l) for l in p["lengths"][q])
    want = header((5000,), ["seed", "range", "lengths", "starts", "code"]) + 8 + 8 * 5 + 17 \
        + 4 * math.ceil(n / coding.huffman_block(n)) + math.ceil(bits / 8)
    assert p.nbytes == want
    assert p.nbytes < Rotated(16, 1024, coding="packed").compress(x).nbytes  # variable length wins


def test_rotation_is_in_the_payload():
    x = sample((64,))
    p = Rotated(bucket=64, seed=5).compress(x)
    other = Rotated(bucket=64, seed=99)  # a receiver with another seed decodes it alike
    assert torch.equal(other.decompress(p), Rotated(bucket=64, seed=5).decompress(p))


def test_round_trips_refusals_and_parameters():
    assert_round_trips(get("rotated(levels=16)"))
    assert_round_trips(Rotated(bucket=8, coding="packed"))
    assert_refuses_nonfinite(Rotated())
    with pytest.raises(ValueError, match=r"rotated: bucket=12 is not a power of two"):
        Rotated(bucket=12)
    with pytest.raises(ValueError, match=r"rotated: levels=256 is out of range; valid: an integer in 1..255"):
        Rotated(levels=256)
