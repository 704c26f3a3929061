"""Error feedback: the residual telescopes, per key, on the gather and the sum path."""
import pytest
import torch

from commlab.compress import ErrorFeedback, get
from commlab.compress.base import Compressor, Payload


class Half(Compressor):
    """fp16 cast on the sum path."""
    name, aggregation = "half", "sum"

    def summable(self, t, key=None):
        return t.to(torch.float16)

    def from_summed(self, s, like, count):
        return (s.float() / count).to(like.dtype).reshape(like.shape)


class Scaled(Compressor):
    """Scaled sign: ||x||_1/d * sign(x), a biased contraction."""
    name, aggregation = "scaled", "gather"

    def compress(self, t, key=None):
        return Payload({"s": t >= 0, "m": t.abs().mean().reshape(1)}, t.shape, t.dtype)

    def decompress(self, p):
        return (p["s"].to(p.dtype) * 2 - 1).reshape(p.shape) * p["m"].to(p.dtype)


def test_telescopes_per_key():
    ef = ErrorFeedback(Scaled())
    g = torch.Generator().manual_seed(0)
    sent = {"a": torch.zeros(50, dtype=torch.float64), "b": torch.zeros(7, dtype=torch.float64)}
    total = {k: torch.zeros_like(v) for k, v in sent.items()}
    for _ in range(30):
        for k, v in sent.items():
            x = torch.randn(v.shape, generator=g, dtype=torch.float64)
            total[k] += x
            v += ef(x, key=k)
    for k in sent:
        assert torch.allclose(sent[k] + ef.residual(k), total[k], atol=1e-10)
    assert ef.name == "scaled+ef" and not ef.unbiased and ef.aggregation == "gather"


def test_sum_path_telescopes_with_fp16_inputs():
    ef = ErrorFeedback(Half())
    x = torch.randn(100).to(torch.float16)
    s = ef.summable(x, "w")
    local = ef.from_summed(s.clone(), x, 1).float()
    assert torch.allclose(local + ef.residual("w"), x.float())
    assert ef.residual("w").dtype == torch.float32


def test_reset_and_repr():
    ef = ErrorFeedback(Scaled())
    ef(torch.randn(4))
    assert ef.residual() is not None
    ef.reset()
    assert ef.residual() is None


def test_registry_composes_ef():
    ef = get("qsgd(levels=2, bucket=16)+ef")
    assert isinstance(ef, ErrorFeedback) and ef.name == "qsgd+ef" and ef.inner.levels == 2
    with pytest.raises(ValueError, match="already has error feedback"):
        get("ef_signsgd+ef")
    with pytest.raises(ValueError, match="'ef' wraps another compressor"):
        get("ef")
    x = torch.randn(40, dtype=torch.float64)
    total = torch.zeros_like(x)
    for _ in range(20):
        total += ef(x, "w")
    assert torch.allclose(total + ef.residual("w"), 20 * x)


@pytest.mark.parametrize("spec,why", [("diana", "learns the shifts h"), ("laq", "its own memory"),
                                      ("terngrad", "share one scaler"), ("powersgd", "built in"),
                                      ("gtopk(0.1)", "built in")])
def test_compressors_with_their_own_correction_refuse_ef(spec, why):
    with pytest.raises(ValueError, match=rf"{why}.*without '\+ef'"):
        get(f"{spec}+ef")
