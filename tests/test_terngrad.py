"""TernGrad: unbiased, variance formula, 1.6 bits per coordinate, scaler sharing over Comm."""
import math

import pytest
import torch
from compress_cases import assert_refuses_nonfinite, assert_round_trips, assert_unbiased, header, sample

from commlab.arch.aggregate import aggregate
from commlab.compress import get
from commlab.compress.terngrad import TernGrad
from commlab.runtime import launch


def test_unbiased_and_ternary():
    x = sample((30,))
    d = assert_unbiased(TernGrad(seed=1), x, 20000, batched=True)
    s = float(x.abs().max())
    assert set(torch.unique(d / s).round().tolist()) <= {-1.0, 0.0, 1.0}


def test_variance_is_s_l1_minus_l2():
    x = sample((40,), 2)
    d = TernGrad(seed=3)(x.repeat(5000)).double().view(5000, -1)
    var = float((d - x.double()).pow(2).sum(1).mean())
    s = float(x.abs().max())
    want = s * float(x.abs().sum()) - float(x.pow(2).sum())
    assert abs(var - want) <= 0.05 * want


@pytest.mark.parametrize("shape", [(1,), (5,), (1000,), (7, 11)])
def test_bytes(shape):
    p = TernGrad().compress(sample(shape))
    assert p.nbytes == header(shape, ["scale", "trits"]) + 4 + math.ceil(math.prod(shape) / 5)


def test_given_scale_and_its_check():
    x = torch.tensor([0.5, -1.0, 0.25])
    p = TernGrad().compress(x, scale=4.0)
    assert float(p["scale"]) == 4.0
    with pytest.raises(ValueError, match="terngrad: scale=0.5 is below"):
        TernGrad().compress(x, scale=0.5)


def test_scaler_sharing_over_comm():
    def body(comm):
        x = torch.full((8,), float(comm.rank + 1)) * torch.tensor([1, -1] * 4)
        c = TernGrad(seed=comm.rank)
        before = comm.stats.snapshot()
        out = aggregate(comm, c, x)
        return out, comm.stats.bytes_sent - before.bytes_sent
    results = launch(body, 3)
    outs = [r[0] for r in results]
    for o in outs[1:]:
        assert torch.equal(o, outs[0])
    # every worker used s = 3 (the max); the aggregate is 3/3 * sum of ternary values
    assert set(torch.unique(outs[0] * 3 / 3).round().tolist()) <= {-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0}


def test_clip_is_biased_and_bounded():
    c = get("terngrad(clip=2.5)")
    assert not c.unbiased
    x = torch.cat([torch.zeros(99), torch.tensor([100.0])])
    assert float(c.compress(x)["scale"]) < 100
    with pytest.raises(ValueError, match=r"terngrad: clip=0 is out of range"):
        get("terngrad(clip=0)")


def test_round_trips_and_refusals():
    assert_round_trips(TernGrad())
    assert_refuses_nonfinite(TernGrad())
    assert torch.equal(TernGrad()(torch.zeros(4)), torch.zeros(4))


def test_bytes_coding_one_int8_per_digit():
    """GRACE's coding: the scaler and one int8 in {-1, 0, +1} per coordinate, the same values."""
    x = sample((30,))
    d = assert_unbiased(TernGrad(coding="bytes", seed=1), x, 20000, batched=True)
    assert set(torch.unique(d / float(x.abs().max())).round().tolist()) <= {-1.0, 0.0, 1.0}
    for shape in [(1,), (5,), (1000,), (7, 11)]:
        y = sample(shape, 4)
        c = get("terngrad(coding='bytes')")
        p = c.compress(y)
        digits = p["digits"]
        assert digits.dtype == torch.int8 and digits.numel() == math.prod(shape)
        assert set(digits.tolist()) <= {-1, 0, 1} and bool((digits.view(shape) * torch.sign(y) >= 0).all())
        want = header(shape, ["scale", "digits"]) + 4 + math.prod(shape)
        assert p.nbytes == p.to_bytes().numel() == c.payload_bytes(shape) == want
        assert c.wire(shape) == (("allreduce", 4), ("allgather", want))
        assert torch.equal(c.decompress(p), TernGrad(seed=0)(y))  # same seed: the packed coding's values
    assert_round_trips(TernGrad(coding="bytes"))
    assert_refuses_nonfinite(TernGrad(coding="bytes"))
    assert torch.equal(TernGrad(coding="bytes")(torch.zeros(4)), torch.zeros(4))
    assert get("terngrad", coding="bytes").coding == "bytes" and TernGrad().coding == "packed"


def test_bytes_coding_shares_the_scaler_over_comm():
    def body(comm):
        x = torch.full((8,), float(comm.rank + 1)) * torch.tensor([1, -1] * 4)
        return aggregate(comm, TernGrad(coding="bytes", seed=comm.rank), x)
    outs = launch(body, 3)
    for o in outs[1:]:
        assert torch.equal(o, outs[0])
    assert set(torch.unique(outs[0]).round().tolist()) <= {-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0}


def test_unknown_coding():
    with pytest.raises(ValueError, match=r"^terngrad: unknown coding 'zip'; valid: packed, bytes$"):
        get("terngrad(coding='zip')")
