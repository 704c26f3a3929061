"""commlab.advisor.penalties: the shipped table (two problems, every option, each at its own best
learning rate, BSP included), a row measured again equal to it (the runs are deterministic), the
penalty the advisor ranks by (the worse problem, never below 1), rounds counted from samples, and
the refusals."""
import math

import pandas as pd
import pytest

from commlab.advisor import penalties
from commlab.history import History


@pytest.fixture(scope="module")
def table():
    return penalties.load()


def test_shipped_table_has_every_problem_and_option(table):
    assert list(table.index) == [(p, o) for p in penalties.PROBLEMS for o in penalties.OPTIONS]
    for problem, t in table.groupby(level="problem"):
        t = t.droplevel("problem")
        assert t.loc["bsp", "penalty"] == 1.0 and t.loc["bsp", "reached"]
        reached = t[t["reached"]]
        assert ((reached["penalty"] - reached["rounds"] / reached["bsp_rounds"]).abs() < 1e-12).all()
        assert t[~t["reached"]]["penalty"].isna().all()
        for s in penalties.SEEDS:
            assert f"rounds_seed{s}" in t.columns


def test_every_option_is_at_its_own_best_learning_rate(table):
    cols = [f"rounds_lr{lr:g}" for lr in penalties.LRS]
    reached = table[table["reached"]]
    best = reached[cols].min(axis=1)
    assert (reached["rounds"] == best).all()
    for (problem, option), row in reached.iterrows():
        assert row[f"rounds_lr{row['lr']:g}"] == row["rounds"]
    bsp = table.xs("bsp", level="option")
    assert (bsp["lr"] == bsp["bsp_lr"]).all()


def test_a_row_measured_again_equals_the_table(table):
    row = table.loc[("digits-mlp", "local_sgd(period=4)")]
    seed = penalties.SEEDS[0]
    rounds = penalties.measure_one("digits-mlp", "local_sgd(period=4)", row["lr"], seed, int(row["max_rounds"]))
    assert rounds == row[f"rounds_seed{seed}"]


def test_ranking_takes_the_worse_problem_and_never_less_than_one():
    rows = [("a", "bsp", 1.0, True), ("a", "signsgd+ef", 0.6, True), ("a", "dpsgd", 1.1, True),
            ("a", "topk(0.01)", math.nan, False),
            ("b", "bsp", 1.0, True), ("b", "signsgd+ef", 0.9, True), ("b", "dpsgd", 1.3, True),
            ("b", "topk(0.01)", 2.0, True)]
    t = pd.DataFrame(rows, columns=["problem", "option", "penalty", "reached"]).set_index(["problem", "option"])
    r = penalties.for_ranking(t)
    assert r.loc["signsgd+ef", "penalty"] == 1.0
    assert r.loc["signsgd+ef", "note"] == "measured a 0.60, b 0.90; below 1, ranked as exact SGD"
    assert r.loc["dpsgd", "penalty"] == 1.3 and r.loc["dpsgd", "note"] == "measured a 1.10, b 1.30"
    assert not r.loc["topk(0.01)", "reached"] and math.isnan(r.loc["topk(0.01)", "penalty"])
    assert r.loc["topk(0.01)", "note"] == "measured a missed, b 2.00"
    shipped = penalties.for_ranking()
    assert (shipped[shipped["reached"]]["penalty"] >= 1).all()


def test_rounds_count_samples_not_steps():
    h = History(steps=[1, 2, 3, 4], test_accuracy=[math.nan, 0.5, math.nan, 0.95], samples=[32, 32, 32, 32])
    assert penalties.rounds_to_target(h, workers=2, batch=32, target=0.93) == 2.0  # 128 samples: 2 rounds of 2 x 32
    h.test_accuracy = [0.1] * 4
    assert math.isnan(penalties.rounds_to_target(h, 2, 32, 0.93))


def test_refusals():
    with pytest.raises(ValueError, match="unknown option 'asp'; valid: bsp, local_sgd"):
        penalties.trainer_options("digits-mlp", "asp", 0.05, 0)
    with pytest.raises(ValueError, match="unknown problem 'cifar'; valid: digits-mlp, tokens-transformer"):
        penalties.measure_one("cifar", "bsp", 0.05, 0, 10)
