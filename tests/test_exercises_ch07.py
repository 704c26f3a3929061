"""Chapter 07 exercise checks: open, right and wrong answers; they print and never raise."""
import pytest
import torch

from commlab import compress
from commlab.chapters.exercises import ch07
from exercise_contract import assert_check_contract

NUMBER_CHECKS = [ch07.check_topk_bytes, ch07.check_contraction]
IDS = [c.__name__ for c in NUMBER_CHECKS]
RIGHT = {
    ch07.check_topk_bytes: 26 + 1000 * (4 + 4),   # header of a 1-D sparse payload, k = 1000 int32 + fp32
    ch07.check_contraction: 1 - 1 / 10,           # at least one coordinate is kept: k = 1
}
WRONG = {
    ch07.check_topk_bytes: 1000 * 8,              # the header forgotten
    ch07.check_contraction: 0.99,                 # 1 - ratio: k = 0.1 is not a number of coordinates
}


def test_by_hand_values_are_the_library_payloads():
    x = torch.randn(1_000_000)
    assert compress.get("topk(0.001)").compress(x).nbytes == RIGHT[ch07.check_topk_bytes]
    assert ch07.topk_bytes(1_000_000, 0.001) == RIGHT[ch07.check_topk_bytes]
    assert compress.get("topk(0.01)").compress(torch.randn(10))["idx"].numel() == 1


@pytest.mark.parametrize("check", NUMBER_CHECKS, ids=IDS)
def test_check_contract(check, capsys):
    assert_check_contract(check, RIGHT[check], WRONG[check], capsys)


def _right_topk(x, k):
    out = torch.zeros_like(x).reshape(-1)
    idx = torch.topk(x.abs().reshape(-1), k).indices
    out[idx] = x.reshape(-1)[idx]
    return out.view(x.shape)


def _library_topk(x, k):
    return compress.get(f"topk({k / x.numel()})")(x) if k else torch.zeros_like(x)


def _signed(x, k):      # the k largest values, not magnitudes
    out = torch.zeros_like(x).reshape(-1)
    idx = torch.topk(x.reshape(-1), k).indices
    out[idx] = x.reshape(-1)[idx]
    return out.view(x.shape)


def _one_too_many(x, k):
    return _right_topk(x, min(k + 1, x.numel()))


def _flat(x, k):
    return _right_topk(x, k).reshape(-1)


def _threshold(x, k):   # keeps every entry tied with the k-th largest: too many on ties
    if k == 0:
        return torch.zeros_like(x)
    kth = torch.topk(x.abs().reshape(-1), k).values[-1]
    return torch.where(x.abs() >= kth, x, torch.zeros_like(x))


def _raises(x, k):
    raise RuntimeError("boom")


def test_topk_right(capsys):
    assert ch07.check_topk(_right_topk) is True
    assert ch07.check_topk(_library_topk) is True
    assert "correct" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("fn, says", [(_signed, "not the k largest"), (_one_too_many, "kept"),
                                      (_flat, "shape"), (_threshold, "kept")],
                         ids=["signed", "one_too_many", "flat", "threshold_ties"])
def test_topk_wrong(fn, says, capsys):
    assert ch07.check_topk(fn) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "not yet" in out and says in out


def test_topk_open_and_failing(capsys):
    assert ch07.check_topk(None) is False
    assert "not answered yet" in " ".join(capsys.readouterr().out.split())
    assert ch07.check_topk(_raises) is False
    assert "RuntimeError" in " ".join(capsys.readouterr().out.split())
