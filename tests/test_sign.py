"""signSGD, signum, scaled sign / EF-signSGD and 1-bit SGD: values, bytes, majority vote, state."""
import math

import pytest
import torch
from compress_cases import assert_refuses_nonfinite, assert_round_trips, header, sample

from commlab.arch.aggregate import aggregate
from commlab.compress import Payload, get
from commlab.compress.sign import OneBit, ScaledSign, SignSGD, Signum
from commlab.runtime import launch


def test_signsgd_values_and_bytes():
    x = torch.tensor([[0.5, -2.0, 0.0], [-1e-9, 3.0, -0.1]])
    c = SignSGD()
    assert torch.equal(c(x), torch.tensor([[1.0, -1.0, 1.0], [-1.0, 1.0, -1.0]]))
    for shape in [(1,), (8,), (9,), (1000,), (3, 7)]:
        assert c.compress(sample(shape)).nbytes == header(shape, ["signs"]) + math.ceil(math.prod(shape) / 8)
    assert c.aggregation == "majority" and not c.unbiased


def test_majority_vote_combine():
    c = SignSGD()
    xs = [torch.tensor([1.0, 1.0, -1.0, -1.0]), torch.tensor([1.0, -1.0, -1.0, 1.0]),
          torch.tensor([-1.0, -1.0, -1.0, 1.0])]
    assert torch.equal(c.combine([c.compress(x) for x in xs]), torch.tensor([1.0, -1.0, -1.0, 1.0]))
    assert torch.equal(c.combine([c.compress(x) for x in xs[:2]]), torch.tensor([1.0, 0.0, -1.0, 0.0]))  # ties


def test_majority_vote_over_comm():
    votes = torch.tensor([[1, 1, -1, 2], [1, -1, -1, -3], [-1, 5, 1, -2], [1, -1, 1, -1], [1, 1, -1, 1]],
                         dtype=torch.float32)

    def body(comm):
        return aggregate(comm, SignSGD(), votes[comm.rank])
    for out in launch(body, 5):
        assert torch.equal(out, torch.sign(torch.sign(votes).sum(0)))


def test_signum_keeps_momentum_per_key():
    c = Signum(momentum=0.9)
    g1, g2 = torch.tensor([1.0, -1.0]), torch.tensor([-5.0, -5.0])
    assert torch.equal(c(g1, key="a"), torch.tensor([1.0, -1.0]))
    # m = 0.9 * 0.1 * g1 + 0.1 * g2 = [0.09 - 0.5, -0.09 - 0.5]
    assert torch.equal(c(g2, key="a"), torch.tensor([-1.0, -1.0]))
    assert torch.allclose(c.state["a"], torch.tensor([-0.41, -0.59]))
    assert torch.equal(c(g1, key="b"), torch.tensor([1.0, -1.0]))  # a fresh key starts at 0
    c2 = Signum(momentum=0.99)
    c2(torch.tensor([1.0]), "w")
    assert torch.equal(c2(torch.tensor([-0.5]), "w"), torch.tensor([1.0]))  # momentum outvotes one step
    c.reset()
    assert c.state == {}
    with pytest.raises(ValueError, match=r"signum: momentum=1 .*\[0, 1\)"):
        get("signum(momentum=1)")


def test_scaled_sign_and_ef_signsgd():
    x = torch.tensor([1.0, -3.0, 0.5, -0.5])
    c = ScaledSign()
    assert torch.allclose(c(x), torch.tensor([1.25, -1.25, 1.25, -1.25]))
    assert c.compress(x).nbytes == header((4,), ["scale", "signs"]) + 4 + 1
    ef = get("ef_signsgd")
    assert ef.name == "ef_signsgd" and ef.aggregation == "gather"
    sent = sum(ef(x, "w") for _ in range(50))
    assert torch.allclose(sent + ef.residual("w"), 50 * x, atol=1e-4)
    # contraction: ||C(x) - x||^2 = ||x||^2 - ||x||_1^2 / d
    y = sample((100,))
    assert math.isclose(float((c(y) - y).pow(2).sum()), float(y.pow(2).sum() - y.abs().sum() ** 2 / 100),
                        rel_tol=1e-4)


def test_onebit_bucket_means():
    x = torch.tensor([1.0, 3.0, -2.0, -4.0, 5.0, -1.0, 0.0])
    c = OneBit(bucket=4)
    # bucket 1: positives mean 2, negatives -3; bucket 2 (3 coords): positives (5, 0) mean 2.5, negative -1
    assert torch.equal(c(x), torch.tensor([2.0, 2.0, -3.0, -3.0, 2.5, -1.0, 2.5]))
    assert c.compress(x).nbytes == header((7,), ["means", "signs"]) + 2 * 2 * 4 + 1
    assert torch.equal(OneBit(bucket=3)(torch.tensor([2.0, 4.0])), torch.tensor([3.0, 3.0]))  # padding ignored
    with pytest.raises(ValueError, match=r"onebit: bucket=0 is out of range"):
        OneBit(bucket=0)


def test_onebit_with_error_feedback_telescopes():
    ef = get("onebit(bucket=8)+ef")
    xs = [sample((20,), i) for i in range(30)]
    sent = sum(ef(x, "k").double() for x in xs)
    assert torch.allclose(sent + ef.residual("k").double(), sum(x.double() for x in xs), atol=1e-4)


@pytest.mark.parametrize("name", ["signsgd", "signum", "scaled_sign", "ef_signsgd", "onebit"])
def test_round_trips_and_refusals(name):
    assert_round_trips(get(name))
    assert_refuses_nonfinite(get(name))


@pytest.mark.parametrize("name,parts", [("signsgd", []), ("signum", []), ("scaled_sign", ["scale"]),
                                        ("ef_signsgd", ["scale"]), ("onebit", ["means"])])
@pytest.mark.parametrize("shape", [(1,), (9,), (1000,), (3, 7)], ids=str)
def test_bytes_coding_sends_one_bool_per_sign(name, parts, shape):
    """GRACE's coding: the same signs (1 = negative), unpacked, and the same decoded values."""
    packed, unpacked = get(name), get(f"{name}(coding='bytes')")
    x, d = sample(shape, 2), math.prod(shape)
    p, q = packed.compress(x, key="w"), unpacked.compress(x, key="w")
    assert q["signs"].dtype == torch.bool and q["signs"].numel() == d
    assert torch.equal(q["signs"], packed.base.decompress(p).reshape(-1) < 0)
    assert p["signs"].dtype == torch.uint8 and p["signs"].numel() == -(-d // 8)  # the default is unchanged
    extra = {"scale": 4, "means": 8 * -(-d // 512)}
    want = header(shape, parts + ["signs"]) + sum(extra[k] for k in parts) + d
    assert q.nbytes == q.to_bytes().numel() == unpacked.payload_bytes(shape) == want
    assert unpacked.wire(shape) == (("allgather", want),)
    assert torch.equal(unpacked.base.decompress(q), packed.base.decompress(p))
    assert torch.equal(unpacked.base.decompress(Payload.from_bytes(q.to_bytes())), packed.base.decompress(p))


@pytest.mark.parametrize("name", ["signsgd", "signum", "scaled_sign", "ef_signsgd", "onebit"])
def test_bytes_coding_round_trips_and_refusals(name):
    c = get(f"{name}(coding='bytes')")
    assert c.base.coding == "bytes" and get(name).base.coding == "packed"
    assert_round_trips(c)
    assert_refuses_nonfinite(c)
    k = get(name, coding="bytes")  # the keyword form builds the same compressor
    assert type(k) is type(c) and repr(k) == repr(c) and k.base.coding == "bytes"


def test_bytes_coding_majority_vote_and_onebit_means():
    c = SignSGD(coding="bytes")
    xs = [torch.tensor([1.0, 1.0, -1.0, -1.0]), torch.tensor([1.0, -1.0, -1.0, 1.0]),
          torch.tensor([-1.0, -1.0, -1.0, 1.0])]
    assert torch.equal(c.combine([c.compress(x) for x in xs]), torch.tensor([1.0, -1.0, -1.0, 1.0]))
    x = torch.tensor([1.0, 3.0, -2.0, -4.0, 5.0, -1.0, 0.0])
    assert torch.equal(OneBit(bucket=4, coding="bytes")(x), torch.tensor([2.0, 2.0, -3.0, -3.0, 2.5, -1.0, 2.5]))
    assert torch.equal(Signum(0.5, coding="bytes")(x, "a"), torch.where(x < 0, -1.0, 1.0))
    assert torch.allclose(ScaledSign(coding="bytes")(torch.tensor([1.0, -3.0])), torch.tensor([2.0, -2.0]))


@pytest.mark.parametrize("spec", ["signsgd(coding='zip')", "signum(coding='bits')", "scaled_sign(coding=1)",
                                  "ef_signsgd(coding='elias')", "onebit(coding='')"])
def test_unknown_coding(spec):
    name, value = spec.split("(")[0], spec.split("coding=")[1][:-1]
    who = "scaled_sign" if name == "ef_signsgd" else name
    with pytest.raises(ValueError, match=rf"^{who}: unknown coding {value}; valid: packed, bytes$"):
        get(spec)
