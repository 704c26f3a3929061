"""Hard threshold: exactly the coordinates above tau, variable payload size; Strom's sign form."""
import pytest
import torch

from commlab.compress.threshold import Threshold


def test_exact_values_above_tau():
    x = torch.randn(10_000, generator=torch.Generator().manual_seed(0))
    for tau in (0.0, 0.5, 2.0, 10.0):
        c = Threshold(tau)
        p = c.compress(x)
        assert torch.equal(c.decompress(p), torch.where(x.abs() > tau, x, torch.zeros_like(x)))
        nnz = int((x.abs() > tau).sum())
        assert p["val"].numel() == nnz and p.nbytes == c.payload_bytes(x.shape, kept=nnz)
        assert (x - c.decompress(p)).abs().max() <= tau


def test_payload_size_follows_the_data():
    c = Threshold(1.0)
    small, large = c.compress(torch.full((100,), 0.5)), c.compress(torch.full((100,), 2.0))
    assert small.nbytes < large.nbytes and small["val"].numel() == 0 and large["val"].numel() == 100


@pytest.mark.parametrize("d", [10, 32768, 40_000])
def test_strom_signs_in_the_index_word(d):
    x = torch.randn(d, generator=torch.Generator().manual_seed(d))
    x[0], x[-1] = 3.0, -3.0  # the extreme positions, both signs
    c = Threshold(1.0, signs=True)
    p = c.compress(x)
    assert p["idx"].dtype == (torch.int16 if d <= 32768 else torch.int32)
    want = torch.where(x > 1.0, 1.0, torch.where(x < -1.0, -1.0, 0.0))
    assert torch.equal(c.decompress(p), want)
    assert p.nbytes == c.payload_bytes(x.shape, kept=int((x.abs() > 1).sum()))


@pytest.mark.parametrize("signs", [False, True])
def test_refuses_nan_and_inf_in_both_wire_forms(signs):
    from compress_cases import assert_refuses_nonfinite

    assert_refuses_nonfinite(Threshold(0.5, signs=signs))
    x = torch.full((10,), 0.1)
    x[4] = float("nan")  # below any tau it would not be sent, but it is still refused
    with pytest.raises(ValueError, match="threshold: input holds 1 NaN/Inf"):
        Threshold(1.0, signs=signs).compress(x)
    big = torch.full((100,), 60000.0, dtype=torch.float16)  # the kept values' sum overflows fp16: fine
    assert torch.equal(Threshold(1.0)(big), big)
