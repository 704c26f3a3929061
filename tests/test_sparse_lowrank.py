"""What every sparsifier and low-rank compressor promises: registry names, shape and dtype
kept, payloads that survive the wire with exact byte counts, clear errors."""
import pytest
import torch

from commlab.compress import get
from commlab.compress.base import Payload

SPECS = ["topk(0.05)", "randk(0.05)", "threshold(0.5)", "threshold(0.5, signs=True)",
         "dgc(0.01, momentum=0.9, warmup_steps=3)", "gtopk(0.05)", "powersgd(rank=2)", "atomo(rank=2)"]
SHAPES = [(1000,), (30, 40), (4, 5, 6), (70_000,), (1,), (0,)]
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def _x(shape, dtype, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


@pytest.mark.parametrize("spec", SPECS)
def test_shape_dtype_and_wire_round_trip(spec):
    c = get(spec)
    for shape in SHAPES:
        for dtype in DTYPES:
            x = _x(shape, dtype)
            x0 = x.clone()
            p = c.compress(x, key=(shape, dtype))
            assert torch.equal(x, x0), "compress must not change its input"
            y = c.decompress(p)
            assert y.shape == x.shape and y.dtype == x.dtype, (spec, shape, dtype)
            assert torch.isfinite(y.float()).all()
            data = p.to_bytes()
            assert p.nbytes == data.numel()
            assert torch.equal(c.decompress(Payload.from_bytes(data)), y)


def _theory(c, p, shape, dtype):
    """The compressor's closed-form payload size for what this payload carries."""
    name = c.name
    if name == "threshold":
        nnz = p["idx"].numel()
        return c.payload_bytes(shape, dtype, kept=nnz)
    if name == "dgc":
        return c.payload_bytes(shape, dtype, step=c.step("k") - 1)
    if name == "atomo":
        return c.payload_bytes(shape, dtype, r=c.atoms(p))
    return c.payload_bytes(shape, dtype)


@pytest.mark.parametrize("spec", SPECS)
def test_payload_bytes_equal_the_closed_form(spec):
    c = get(spec)
    for shape in [(1000,), (30, 40), (70_000,), (100_000,)]:
        for dtype in (torch.float32, torch.float16):
            p = c.compress(_x(shape, dtype), key="k")
            assert p.nbytes == _theory(c, p, shape, dtype), (spec, shape, dtype)
            if c.name in ("topk", "randk", "gtopk", "powersgd", "atomo") and shape[0] >= 70_000:
                assert p.nbytes < 0.2 * shape[0] * torch.empty((), dtype=dtype).element_size()


def test_known_sizes():
    """Two sizes by hand: top-k 1% of 100000 fp32 (int32 indices) and of 1000 fp32 (int16)."""
    assert get("topk(0.01)").compress(torch.randn(100_000)).nbytes == 26 + 1000 * (4 + 4)
    assert get("topk(0.01)").compress(torch.randn(1000)).nbytes == 26 + 10 * (2 + 4)
    assert get("randk(0.01)").compress(torch.randn(1000)).nbytes == 27 + 8 + 10 * 4
    # PowerSGD rank 2 of a 30 x 40 fp32 matrix: 2 (30 + 40) numbers; 2-D header 4 + 8 + 7 + 7
    assert get("powersgd(rank=2)").compress(torch.randn(30, 40)).nbytes == 26 + 140 * 4
    assert get("atomo(rank=2)").compress(torch.randn(30, 40)).nbytes == 26 + 140 * 4


@pytest.mark.parametrize("spec", SPECS)
def test_nan_and_inf_are_refused_by_name(spec):
    c = get(spec)
    name = spec.split("(")[0]
    for bad in (float("nan"), float("inf"), -float("inf")):
        x = torch.randn(100)
        x[7] = bad
        with pytest.raises(ValueError, match=f"{name}: input holds 1 NaN/Inf"):
            c.compress(x)


@pytest.mark.parametrize("spec, match", [
    ("topk(0)", r"topk: ratio=0 .* valid: 0 < ratio <= 1"),
    ("topk(1.5)", r"topk: ratio=1.5 .* valid: 0 < ratio <= 1"),
    ("randk(-0.1)", r"randk: ratio=-0.1 .* valid"),
    ("gtopk(2)", r"gtopk: ratio=2 .* valid"),
    ("dgc(0)", r"dgc: ratio=0 .* valid"),
    ("dgc(0.01, momentum=1.0)", r"dgc: momentum=1.0 .* \[0.0, 1.0\)"),
    ("dgc(0.01, warmup_steps=-1)", r"dgc: warmup_steps=-1 .* >= 0"),
    ("dgc(0.01, clip=0)", r"dgc: clip=0 .* valid"),
    ("threshold(-1)", r"threshold: tau=-1 .* valid"),
    ("powersgd(rank=0)", r"powersgd: rank=0 .* >= 1"),
    ("atomo(rank=0)", r"atomo: rank=0 .* >= 1"),
    ("atomo(rank=1.5)", r"atomo: rank=1.5 .* >= 1"),
])
def test_bad_parameters_name_value_and_range(spec, match):
    with pytest.raises(ValueError, match=match):
        get(spec)


def test_properties():
    unbiased = {s.split("(")[0]: get(s).unbiased for s in SPECS}
    assert unbiased == {"topk": False, "randk": True, "threshold": False, "dgc": False, "gtopk": False,
                        "powersgd": False, "atomo": True}
    assert get("randk(0.1)").aggregation == get("powersgd").aggregation == "sum"
    assert all(get(s).aggregation == "gather" for s in ("topk(0.1)", "threshold(1)", "dgc(0.1)", "atomo"))
