"""Chapter 08 exercise checks: open, right and wrong answers; they print and never raise."""
import pytest

from commlab import schedule as sched
from commlab.chapters.exercises import ch08
from exercise_contract import assert_check_contract, assert_unanswered

NUMBER_CHECKS = [ch08.check_wfbp_time, ch08.check_best_bucket]
IDS = [c.__name__ for c in NUMBER_CHECKS]
RIGHT = {
    # layer 3 2->4, layer 2 4->9, layer 1 9->14, layer 0 14->16, then 4 ms of forward
    ch08.check_wfbp_time: 20.0,
    # two buckets of two layers: 22 ms (one per layer 26, 3+1 layers 24, all 23)
    ch08.check_best_bucket: 8,
}
WRONG = {
    ch08.check_wfbp_time: 16.0,      # the forward forgotten
    ch08.check_best_bucket: 16,      # everything in one bucket (BSP)
}


def test_by_hand_values_are_the_dispatchers():
    assert ch08.iteration_ms("wfbp") == pytest.approx(RIGHT[ch08.check_wfbp_time])
    times = {mb: ch08.iteration_ms(f"fusion(mb={mb}, first_mb={mb})", ch08.FUSION) for mb in ch08.FUSION["candidates"]}
    assert times == pytest.approx({1: 26.0, 4: 26.0, 8: 22.0, 12: 24.0, 16: 23.0})
    assert ch08.best_bucket_mb() == 8
    # MG-WFBP's greedy pass does not find the best bucketing here; the search's exact buckets
    # do, and one of its ByteScheduler plans does better still (the next forward waits per layer)
    assert ch08.iteration_ms("mg_wfbp", ch08.FUSION) == pytest.approx(23.0)
    assert ch08.iteration_ms("search", ch08.FUSION) == pytest.approx(21.0)


def test_toy_profile():
    prof = ch08.toy_profile()
    assert prof.ready() == pytest.approx([8e-3, 6e-3, 4e-3, 2e-3])
    assert ch08.toy_comm_time()(4_000_000) == pytest.approx(5e-3)
    plan = sched.get("mg_wfbp").plan(prof, ch08.toy_comm_time())
    assert plan.name == "mg_wfbp"


@pytest.mark.parametrize("check", NUMBER_CHECKS, ids=IDS)
def test_check_contract(check, capsys):
    assert_check_contract(check, RIGHT[check], WRONG[check], capsys)


def test_mg_wfbp_messages(capsys):
    assert ch08.mg_wfbp_messages() == [[3], [2], [0, 1]]
    assert_unanswered(ch08.check_mg_wfbp_messages, capsys)
    assert ch08.check_mg_wfbp_messages([[3], [2], [1, 0]]) is True          # order inside a message is free
    assert "correct" in " ".join(capsys.readouterr().out.split())
    assert ch08.check_mg_wfbp_messages([[3], [2], [1], [0]]) is False        # WFBP: no merge
    out = " ".join(capsys.readouterr().out.split())
    assert "not yet" in out and "exactly one" not in out
    assert ch08.check_mg_wfbp_messages([[3], [2, 1]]) is False               # layer 0 missing
    assert "exactly one" in " ".join(capsys.readouterr().out.split())
    assert ch08.check_mg_wfbp_messages(12) is False
    assert "expected a list of lists" in " ".join(capsys.readouterr().out.split())
    assert ch08.check_mg_wfbp_messages([["a"]]) is False
    assert "expected a list of lists" in " ".join(capsys.readouterr().out.split())
