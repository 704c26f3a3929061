"""commlab.compress.get: spec strings, the keyword form, and what the registry lists."""
import pytest
import torch

from commlab.compress import COMPRESSORS, get
from commlab.compress.qsgd import QSGD


@pytest.mark.parametrize("text,name,kw", [
    ("qsgd(levels=16)", "qsgd", dict(levels=16)),
    ("qsgd(4, bucket=128)", "qsgd", dict(levels=4, bucket=128)),
    ("topk(0.05)", "topk", dict(ratio=0.05)),
    ("powersgd(rank=2)", "powersgd", dict(rank=2)),
    ("threshold(0.01, signs=True)", "threshold", dict(tau=0.01, signs=True)),
])
def test_keyword_form_builds_the_same_compressor(text, name, kw):
    a, b = get(text), get(name, **kw)
    assert type(a) is type(b) and repr(a) == repr(b)
    assert {k: getattr(b, k) for k in kw} == kw
    x = torch.randn(3000, generator=torch.Generator().manual_seed(0))
    assert torch.equal(a(x), b(x))  # same seed, same call: the same draw


def test_keyword_form_bad_keyword_names_the_valid_arguments():
    with pytest.raises(ValueError, match=r"bad arguments for compressor 'qsgd\(levls=16\)'.*unexpected keyword "
                                         r"argument 'levls'; valid arguments: levels=16, bucket=512, "
                                         r"coding='packed', seed=0"):
        get("qsgd", levls=16)
    with pytest.raises(ValueError, match=r"compressor 'fp16\(bits=8\)'.*valid arguments: none"):
        get("fp16", bits=8)


def test_keyword_form_checks_values_like_the_string():
    with pytest.raises(ValueError, match=r"qsgd: levels=0 is out of range"):
        get("qsgd", levels=0)
    with pytest.raises(ValueError, match=r"given levels again"):
        get("qsgd(levels=4)", levels=16)
    with pytest.raises(ValueError, match="belong to one compressor name"):
        get("topk+ef", ratio=0.1)
    with pytest.raises(ValueError, match=r"keyword arguments \['levels'\] given with compress=None"):
        get(None, levels=4)
    assert get(None) is None and isinstance(get("qsgd"), QSGD)


def test_unknown_name_lists_every_registered_compressor_and_nothing_planned():
    assert COMPRESSORS.planned == {}  # every compressor of the chapters is implemented
    with pytest.raises(ValueError) as info:
        get("nonsense")
    msg = str(info.value)
    assert msg.startswith("unknown compressor 'nonsense'; valid: ")
    assert "planned" not in msg
    listed = msg.split("valid: ")[1].split(", ")
    assert listed == COMPRESSORS.names() + ["+ef"] and len(listed) >= 20


@pytest.mark.parametrize("spec", ["qsgd", "qsgd(levels=127, coding='bytes')", "signsgd(coding='bytes')",
                                  "signum(momentum=0.5)", "terngrad(clip=2.5, coding='bytes')",
                                  "onebit(bucket=100, coding='bytes')+ef", "ef_signsgd(coding='bytes')",
                                  "powersgd(rank=1, layout='tensorflow')", "topk(0.01)+ef"])
def test_repr_is_the_spec_with_every_argument_that_differs_from_its_default(spec):
    assert repr(get(spec)) == spec
