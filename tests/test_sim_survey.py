"""sim.survey: the measured grid as published, the testbed, and the judgement of the simulator."""
import pandas as pd
import pytest

from commlab import sim
from commlab.sim import survey


@pytest.fixture(scope="module")
def table():
    return survey.compare()


def test_the_grid_is_the_published_table():
    g = survey.grid()
    assert len(g) == 3 + 3 * 3 * 7 * 4  # three one-GPU rows; models x networks x methods x GPU counts
    one = g[g.method == "single"].set_index("model").samples_per_s
    assert one.to_dict() == {"resnet50": 253.1, "bert-large": 49.0, "bert-base": 212.8}
    cell = g[(g.model == "resnet50") & (g.network == "10GbE") & (g.method == "mg_wfbp") & (g.gpus == 32)]
    assert cell.samples_per_s.item() == 6883.6 and cell.spread.item() == 12.72
    assert set(g.method) - {"single"} == set(sim.METHODS)


def test_testbed():
    c = survey.testbed(32, "10GbE")
    assert (c.nodes, c.gpus_per_node, c.allreduce) == (8, 4, "nccl")
    assert c.intra.name == "PCIe3-survey" and c.inter.name == "10GbE-survey"
    assert survey.testbed(4).nodes == 1


def test_compare_predicts_every_cell_and_marks_the_calibration(table):
    assert len(table) == 252 and table.predicted.gt(0).all()
    assert (table.error == table.predicted / table.measured - 1).all()
    calibration = table[table.calibration]
    assert len(calibration) == 9  # three cells, each measured on the three networks
    assert calibration.error.abs().max() < 0.01  # (on 100Gb IB, where they were solved; the copies differ a little)


def test_summary_counts(table):
    s = survey.summary(table)
    assert list(s.index) == ["10GbE", "100GbIB", "100GbE", "all"]
    assert s.loc["all", "cells"] == 252 - 9 and s.loc["all", "groups"] == 36
    assert s.groups.iloc[:3].tolist() == [12, 12, 12]
    assert s.loc["all", "best_within_5pct"] == s.best_within_5pct.iloc[:3].sum()
    assert ((s.spearman >= -1) & (s.spearman <= 1)).all() and (s.median_error >= 0).all()


def test_verdicts_count_the_survey_questions():
    rows = [dict(network="n", model="m", gpus=4, method=m, speedup=v) for m, v in
            dict(bsp_a2a=2.0, wfbp_a2a=1.5, mg_wfbp=2.5, bytescheduler_a2a=2.0, bsp_ps=1.0, wfbp_ps=1.5,
                 bytescheduler_ps=2.5).items()]
    v = survey.verdicts(pd.DataFrame(rows))
    assert {m: len(c) for m, c in v["loses"].items()} == dict(wfbp_a2a=1, mg_wfbp=0, bytescheduler_a2a=0, wfbp_ps=0,
                                                               bytescheduler_ps=0)
    assert [w[-1] for w in v["a2a_wins"]] == ["bsp_a2a"] and [w[-1] for w in v["ps_wins"]] == ["bytescheduler_a2a"]
    assert (v["cases"], v["pairs"]) == (1, 3)
    measured = survey.verdicts(survey.measured())  # the survey's own grid, as the issue counted it
    assert len(measured["loses"]["bytescheduler_a2a"]) == 17 and len(measured["ps_wins"]) == 58
