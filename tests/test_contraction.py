"""Contractions for CHOCO, in the book's notation (a contraction of quality omega,
E||Q(x) - x||^2 <= (1 - omega) ||x||^2; an unbiased compressor of variance theta): top-k, scaled
sign and casts are used as they are; random-k scaled by 1/(1 + theta) is random-k without its
d/k rescaling; QSGD scaled so has omega >= 1/(1 + theta) over many draws; the rest is refused.
The variances theta themselves against the measured E||C(x) - x||^2 / ||x||^2."""
import pytest
import torch

from commlab import compress
from commlab.decentral.contraction import Scaled, contraction, omega


def _x(d=2000, seed=0):
    return torch.randn(d, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("spec", ["topk(0.1)", "scaled_sign", "fp16", "bf16"])
def test_contractions_pass_as_they_are(spec):
    c = compress.get(spec)
    assert contraction(c) is c and omega(c, _x()) > 0
    assert contraction(None) is None


def test_scaled_randk_is_randk_without_rescaling():
    c = contraction(compress.get("randk(0.1)"))
    assert isinstance(c, Scaled)
    x = _x()
    out = c.decompress(c.compress(x))
    kept = out != 0
    assert int(kept.sum()) == 200
    torch.testing.assert_close(out[kept], x[kept])
    assert c.compress(x).nbytes == compress.get("randk(0.1)").compress(x).nbytes  # the same wire


@pytest.mark.parametrize("levels", [1, 3, 15])
def test_scaled_qsgd_contracts_by_one_over_one_plus_theta(levels):
    q = compress.get(f"qsgd(levels={levels})")
    c = contraction(q)
    x = _x()
    want = 1 / (1 + q.theta(x.shape))
    assert omega(c, x, draws=50) >= 0.95 * want


@pytest.mark.parametrize("spec", ["signsgd", "threshold(0.1)", "terngrad"])
def test_non_contractions_are_refused(spec):
    with pytest.raises(ValueError, match=r"is not a contraction .* valid: topk, scaled_sign, fp16, bf16"):
        contraction(compress.get(spec), spec)


def test_theta_is_the_measured_variance():
    """randk's theta = d/k - 1 is E||C(x) - x||^2 / ||x||^2 exactly (1 - omega of the unscaled
    compressor, measured); QSGD's theta is Lemma 3.1's bound, which the measured variance stays under."""
    x = _x()
    r = compress.get("randk(0.1)")
    assert r.theta(x.shape) == 2000 / 200 - 1
    assert abs((1 - omega(r, x, draws=400)) / r.theta(x.shape) - 1) < 0.03
    for levels in (1, 3, 15):
        q = compress.get(f"qsgd(levels={levels})")
        assert 0 < 1 - omega(q, x, draws=50) <= q.theta(x.shape)
    assert omega(r, torch.zeros(10)) != omega(r, torch.zeros(10))          # NaN for x = 0


def test_diana_takes_alpha_from_its_quantizer_theta():
    d = compress.get("diana(levels=3, bucket=64)")
    assert d.theta == d.quantizer.theta((64,)) == min(64 / 9, 8 / 3) and d.alpha == 1 / (1 + d.theta)
