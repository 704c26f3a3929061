"""Chapter 04 exercise checks: open, right and wrong answers; they print and never raise."""
import math

import pytest

from commlab.chapters.exercises import ch04
from commlab_instructor import ch04 as solutions
from exercise_contract import assert_check_contract, assert_unanswered


def _binomial_tail_by_hand(n=16, p=0.1, b=2):
    """P(X > b) for X ~ binomial(n, p), from the three terms of P(X <= 2)."""
    q = 1 - p
    return 1 - (q ** n + n * p * q ** (n - 1) + n * (n - 1) / 2 * p ** 2 * q ** (n - 2))


spread_right = solutions.clock_spread()       # the reference solution


def spread_final_only(log, workers):          # wrong: the spread at the end, not the largest
    clocks = [0] * workers
    for w, step, _ in log:
        clocks[w] = step
    return max(clocks) - min(clocks)


def spread_ignores_idle(log, workers):        # wrong: forgets workers that have not pushed yet
    clocks, best = {}, 0
    for w, step, _ in log:
        clocks[w] = step
        best = max(best, max(clocks.values()) - min(clocks.values()))
    return best


def spread_raises(log, workers):
    raise KeyError("oops")


RIGHT = {
    ch04.check_ssp_bound: lambda: 15 * 7,
    ch04.check_backup_wait: _binomial_tail_by_hand,
}
WRONG = {
    ch04.check_ssp_bound: 3 * 15,               # s (N - 1): counts one side of the window only
    ch04.check_backup_wait: 1 - 0.9 ** 16,      # BSP's fraction, b = 0
}
CHECKS = list(RIGHT)
IDS = [c.__name__ for c in CHECKS]


def test_by_hand_values():
    assert ch04.ssp_staleness_bound(8, 1) == 21 and ch04.ssp_staleness_bound(8, 0) == 7
    assert _binomial_tail_by_hand() == pytest.approx(0.2108, abs=1e-4)
    assert ch04.wait_probability(8, 0.1) == pytest.approx(1 - 0.9 ** 8, rel=1e-12)
    assert ch04.wait_probability(16, 0.1, backups=2) == pytest.approx(_binomial_tail_by_hand(), rel=1e-12)
    assert ch04.wait_probability(4, 0.5, backups=4) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("check", CHECKS, ids=IDS)
def test_check_contract(check, capsys):
    assert_check_contract(check, RIGHT[check](), WRONG[check], capsys)


def test_clock_spread_check(capsys):
    assert_unanswered(ch04.check_clock_spread, capsys)
    assert ch04.check_clock_spread(spread_right) is True
    assert "correct" in " ".join(capsys.readouterr().out.split())
    for wrong in (spread_final_only, spread_ignores_idle):
        assert ch04.check_clock_spread(wrong) is False
        assert "not yet" in " ".join(capsys.readouterr().out.split())
    assert ch04.check_clock_spread(spread_raises) is False
    assert "raised KeyError" in " ".join(capsys.readouterr().out.split())


def test_random_logs_are_valid_server_logs():
    import random

    log = ch04._random_log(random.Random(0), 4, 6)
    assert len(log) == 24
    for w in range(4):
        assert [step for v, step, _ in log if v == w] == list(range(1, 7))   # each worker's clock counts up
    assert math.isfinite(sum(s for *_, s in log))
