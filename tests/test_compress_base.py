"""The Compressor interface's aggregation paths, checks and the registry."""
import pytest
import torch

from commlab.arch.aggregate import aggregate
from commlab.compress import COMPRESSORS, get
from commlab.compress.base import (Compressor, Payload, check_int, check_levels, check_number, check_ratio,
                                   check_rank, check_tensor)
from commlab.runtime import launch
from commlab.spec import Registry


class Half(Compressor):
    """Test compressor: fp16 cast, summable."""
    name, unbiased, aggregation = "half", False, "sum"

    def compress(self, t, key=None):
        self.check(t)
        return Payload({"v": t.to(torch.float16)}, t.shape, t.dtype)

    def decompress(self, p):
        return p["v"].to(p.dtype).reshape(p.shape)

    def summable(self, t, key=None):
        return t.to(torch.float32).reshape(-1).to(torch.float16).float()

    def from_summed(self, s, like, count):
        return (s / count).to(like.dtype).reshape(like.shape)


class Signs(Half):
    name, aggregation = "signs", "majority"

    def compress(self, t, key=None):
        return Payload({"s": (t >= 0)}, t.shape, t.dtype)

    def decompress(self, p):
        return (p["s"].to(p.dtype) * 2 - 1).reshape(p.shape)


def test_checks_name_value_and_range():
    with pytest.raises(TypeError, match="qsgd: expected a floating-point tensor"):
        check_tensor(torch.arange(3), "qsgd")
    with pytest.raises(ValueError, match="qsgd: input holds 2 NaN/Inf"):
        check_tensor(torch.tensor([1.0, float("nan"), float("inf")]), "qsgd")
    for bad in (0, -0.1, 1.5, True, "x"):
        with pytest.raises(ValueError, match=r"topk: ratio=.* valid: 0 < ratio <= 1"):
            check_ratio(bad, "topk")
    with pytest.raises(ValueError, match=r"qsgd: levels=0 is out of range; valid: an integer >= 1"):
        check_levels(0, "qsgd")
    with pytest.raises(ValueError, match=r"powersgd: rank=0 .* >= 1"):
        check_rank(0, "powersgd")
    with pytest.raises(ValueError, match=r"x: bits=9 .* 1..8"):
        check_int(9, "x", "bits", 1, 8)
    with pytest.raises(ValueError, match=r"signum: momentum=1.0 .* \[0, 1\)"):
        check_number(1.0, "signum", "momentum", 0, 1, high_open=True)


def test_generator_is_deterministic_per_call():
    c = Compressor(seed=3)
    a = torch.rand(4, generator=c.generator("cpu"))
    assert torch.equal(a, torch.rand(4, generator=Compressor(seed=3).generator("cpu")))
    c.tick()
    assert not torch.equal(a, torch.rand(4, generator=c.generator("cpu")))
    with pytest.raises(ValueError, match="seed"):
        Compressor(seed=1.5)


def _aggregate(comp_factory, world=3):
    def body(comm):
        c = comp_factory()
        t = torch.full((5,), float(comm.rank) - 0.5)
        return aggregate(comm, c, t)
    return launch(body, world)


def test_aggregate_sum_gather_majority():
    for out in _aggregate(Half):
        assert torch.allclose(out, torch.full((5,), 0.5))
    class Gathered(Half):
        aggregation = "gather"
    for out in _aggregate(Gathered):
        assert torch.allclose(out, torch.full((5,), 0.5))
    for out in _aggregate(Signs):   # signs -1, +1, +1 -> +1
        assert torch.equal(out, torch.ones(5))


def test_registry_composes_wrappers_and_names_wrappers():
    r = Registry("widget")
    r.register("a", lambda x=1: ("a", x))
    r.register_wrapper("w", lambda inner, k=0: ("w", inner, k))
    assert r.build("a(2)+w(k=3)") == ("w", ("a", 2), 3)
    with pytest.raises(ValueError, match="'w' wraps another widget"):
        r.build("w")
    with pytest.raises(NotImplementedError, match="combining widgets"):
        r.build("a+a")
    with pytest.raises(ValueError, match=r"valid: a, \+w"):
        r.build("zzz")


def test_get_none_and_unknown():
    assert get(None) is None and get("none") is None
    with pytest.raises(ValueError, match="unknown compressor 'zzz'; valid: .*\\+ef"):
        get("zzz")
    assert "ef" in COMPRESSORS.wrappers
