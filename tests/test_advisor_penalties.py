"""commlab.advisor.penalties: the shipped table's shape, a row measured again equal to it (the runs
are deterministic), rounds counted from samples, and the refusals."""
import math

import pytest

from commlab.advisor import penalties
from commlab.history import History


def test_shipped_table_has_every_option():
    t = penalties.load()
    assert list(t.index) == list(penalties.OPTIONS)
    assert t.loc["bsp", "penalty"] == 1.0 and t.loc["bsp", "reached"]
    reached = t[t["reached"]]
    assert ((reached["penalty"] - reached["rounds"] / reached["bsp_rounds"]).abs() < 1e-12).all()  # CSV round trip
    assert t[~t["reached"]]["penalty"].isna().all()
    for s in penalties.SEEDS:
        assert f"rounds_seed{s}" in t.columns


def test_a_row_measured_again_equals_the_table():
    t = penalties.load()
    rounds = penalties.measure_one("local_sgd(period=4)", penalties.SEEDS[0])
    assert rounds == t.loc["local_sgd(period=4)", f"rounds_seed{penalties.SEEDS[0]}"]


def test_rounds_count_samples_not_steps():
    h = History(steps=[1, 2, 3, 4], test_accuracy=[math.nan, 0.5, math.nan, 0.95], samples=[32, 32, 32, 32])
    assert penalties.rounds_to_target(h, workers=2, batch=32) == 2.0  # 128 samples = 2 rounds of 2 x 32
    h.test_accuracy = [0.1] * 4
    assert math.isnan(penalties.rounds_to_target(h, 2, 32))


def test_refusals():
    with pytest.raises(ValueError, match="unknown option 'asp'; valid: bsp, local_sgd"):
        penalties.measure_one("asp", 0)
