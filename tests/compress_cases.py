"""Shared checks for compressor tests: unbiasedness over seeded draws, round trips in every
float dtype, wire sizes, NaN/Inf refusal."""
import pytest
import torch

from commlab.compress.base import Payload, header_bytes

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def sample(shape=(20,), seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def draws(compressor, x, n, batched=False):
    """n outputs C(x) of one compressor: n calls (its call counter advances: fresh randomness
    each), or with ``batched`` one call on n copies of x side by side (for compressors that
    work bucket by bucket, with x a whole number of buckets: the draws are independent)."""
    if batched:
        return compressor(x.reshape(1, -1).repeat(n, 1)).double()
    return torch.stack([compressor(x).double() for _ in range(n)])


def assert_unbiased(compressor, x, n=2000, batched=False):
    """|mean of n draws - x| <= 4 std / sqrt(n) in every coordinate (plus rounding slack)."""
    d = draws(compressor, x, n, batched)
    mean, std = d.mean(0), d.std(0)
    slack = 4 * std / n ** 0.5 + 1e-6 * x.double().abs().max()
    bad = (mean - x.double()).abs() > slack
    assert not bad.any(), f"{compressor.name}: biased at {bad.nonzero().flatten().tolist()}: mean " \
                          f"{mean[bad].tolist()} vs x {x.double()[bad].tolist()}"
    return d


def assert_round_trips(compressor, shape=(3, 50)):
    """decompress(compress(x)) keeps shape and dtype, and the bytes on the wire decode alike."""
    for dtype in DTYPES:
        x = sample(shape, 1, dtype)
        p = compressor.compress(x)
        y = compressor.decompress(p)
        assert y.shape == x.shape and y.dtype == dtype, (compressor.name, dtype)
        q = Payload.from_bytes(p.to_bytes())
        assert p.nbytes == p.to_bytes().numel()
        assert torch.equal(compressor.decompress(q), y)


def assert_refuses_nonfinite(compressor):
    for bad in (float("nan"), float("inf"), -float("inf")):
        x = torch.ones(10)
        x[3] = bad
        with pytest.raises(ValueError, match=f"{compressor.name}: input holds 1 NaN/Inf"):
            compressor.compress(x)
    with pytest.raises(TypeError, match=f"{compressor.name}: expected a floating-point tensor"):
        compressor.compress(torch.arange(10))


def header(shape, names):
    return header_bytes(len(shape), names)
