"""Natural compression: powers of two, unbiased, variance <= ||x||^2 / 8, 9 bits a value."""
import math

import pytest

import torch
from compress_cases import assert_refuses_nonfinite, assert_round_trips, assert_unbiased, header, sample

from commlab.compress import get
from commlab.compress.natural import Natural


def test_outputs_are_neighbouring_powers_of_two():
    x = sample((500,)) * 100
    y = Natural(seed=1)(x)
    m, e = torch.frexp(y)
    assert torch.all(m.abs() == 0.5)  # a power of two
    lo = 2.0 ** torch.floor(torch.log2(x.abs()))
    assert torch.all((y.abs() == lo) | (y.abs() == 2 * lo)) and torch.all(torch.sign(y) == torch.sign(x))


def test_unbiased_and_variance():
    x = torch.cat([sample((30,)), torch.tensor([1.0, 3.0, 0.75, 1e-40, -3e-39])])  # incl. subnormals
    d = assert_unbiased(Natural(seed=2), x, 20000, batched=True)
    var = float((d - x.double()).pow(2).sum(1).mean())
    assert var <= float(x.double().pow(2).sum()) / 8


def test_exact_cases():
    x = torch.tensor([0.0, -0.0, 1.0, -4.0, 2.0 ** -126, 2.0 ** 127])
    assert torch.equal(Natural()(x), x)


def test_bytes():
    for shape in [(1,), (8,), (1001,), (3, 7)]:
        d = math.prod(shape)
        p = Natural().compress(sample(shape))
        assert p.nbytes == header(shape, ["exp", "signs"]) + math.ceil(9 * d / 8)


def test_round_trips_and_refusals():
    assert_round_trips(get("natural"))
    assert_refuses_nonfinite(Natural())


def test_float64_beyond_fp32_range_is_an_error():
    with pytest.raises(ValueError, match="natural: float64 values beyond the fp32 range"):
        Natural().compress(torch.tensor([1e300], dtype=torch.float64))
