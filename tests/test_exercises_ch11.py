"""Chapter 11 exercise checks: by-hand answers, and the contract (they print and never raise)."""
import math

import pytest

from commlab.chapters.exercises import ch11
from exercise_contract import assert_check_contract

_MTBF = 50_000 * 3600 / 4096  # the job's MTBF, seconds
RIGHT = {
    ch11.check_checkpoint_interval: math.sqrt(2 * 90 * _MTBF) / 60,      # about 20.5 minutes
    ch11.check_kv_cache: 2 * 80 * 8 * 128 * 2048 * 2 / 1e9,              # 0.671 GB
    ch11.check_ina_bytes: (2 * 7 / 8 * 100e6) / (math.ceil(100e6 / 256) * (256 + 54)),
}
WRONG = {
    ch11.check_checkpoint_interval: math.sqrt(2 * 90 * 50_000 * 3600) / 60,  # forgot to divide by the GPUs
    ch11.check_kv_cache: 2 * 80 * 64 * 128 * 2048 * 2 / 1e9,                 # all 64 heads, not the 8 KV heads
    ch11.check_ina_bytes: 2 * 7 / 8,                                         # forgot the headers
}


def test_by_hand_values_are_the_librarys():
    assert ch11.checkpoint_minutes() == pytest.approx(RIGHT[ch11.check_checkpoint_interval])
    assert ch11.kv_gb() == pytest.approx(RIGHT[ch11.check_kv_cache])
    assert ch11.ring_over_ina() == pytest.approx(RIGHT[ch11.check_ina_bytes])


@pytest.mark.parametrize("check", list(RIGHT), ids=[c.__name__ for c in RIGHT])
def test_check_contract(check, capsys):
    assert_check_contract(check, RIGHT[check], WRONG[check], capsys)
