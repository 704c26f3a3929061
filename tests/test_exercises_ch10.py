"""Chapter 10 exercise checks: by-hand answers, and the contract (they print and never raise)."""
import pytest

from commlab.chapters.exercises import ch10
from exercise_contract import assert_check_contract

RIGHT = {
    ch10.check_zero_memory: (2 * 13e9 + 14 * 13e9 / 16) / 1e9,   # 37.375 GB
    ch10.check_bubble: 7 / 31,
    ch10.check_tp_bytes: 4 * 2 * 3 / 4 * 4 * 1024 * 4096 * 2,    # 4 all-reduces x 2 (t-1)/t x b s h x 2 bytes
}
WRONG = {
    ch10.check_zero_memory: 16 * 13e9 / 16 / 1e9,                 # stage 3's
    ch10.check_bubble: 7 / 24,                                    # (p-1)/m: the bubble over the busy time
    ch10.check_tp_bytes: 4 * 4 * 1024 * 4096 * 2,                 # forgot the ring's 2 (t-1)/t
}


def test_by_hand_values_are_the_librarys():
    assert ch10.zero_gb() == pytest.approx(37.375)
    assert ch10.tp_layer_bytes() == pytest.approx(RIGHT[ch10.check_tp_bytes])


@pytest.mark.parametrize("check", list(RIGHT), ids=[c.__name__ for c in RIGHT])
def test_check_contract(check, capsys):
    assert_check_contract(check, RIGHT[check], WRONG[check], capsys)
