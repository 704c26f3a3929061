"""Chapter 12 exercise checks: by-hand answers, and the contract (they print and never raise)."""
import pytest

from commlab.chapters.exercises import ch12
from exercise_contract import assert_check_contract

RIGHT = {
    ch12.check_time_to_target: 0.30 * 5000 * 1.19 / 3600,   # 0.496 hours
    ch12.check_local_sgd: 250 + 400 / 16,                   # 275 ms
    ch12.check_gather_factor: 32 * 0.02 / 2,                # 0.32
}
WRONG = {
    ch12.check_time_to_target: 0.30 * 5000 / 3600,         # forgot the penalty
    ch12.check_local_sgd: (250 + 400) / 16,                 # divided the compute too
    ch12.check_gather_factor: 0.02,                         # forgot that p payloads arrive
}


def test_by_hand_values_are_the_modules():
    assert ch12.hours_to_target() == pytest.approx(RIGHT[ch12.check_time_to_target])
    assert ch12.local_sgd_ms() == pytest.approx(275)
    assert ch12.gather_factor() == pytest.approx(0.32)


@pytest.mark.parametrize("check", list(RIGHT), ids=[c.__name__ for c in RIGHT])
def test_check_contract(check, capsys):
    assert_check_contract(check, RIGHT[check], WRONG[check], capsys)
