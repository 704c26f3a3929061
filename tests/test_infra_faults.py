"""commlab.infra.faults: the job's MTBF, Young/Daly's interval, the goodput formula against a
simulation of the process over many draws, and the refusals."""
import math

import pytest

from commlab.infra import faults


def test_job_mtbf_divides_by_gpus_and_llama3_is_about_three_hours():
    assert faults.job_mtbf(16384) / 3600 == pytest.approx(54 * 24 / 419)
    assert faults.job_mtbf(2, 100.0) == 50.0


def test_young_daly_maximises_the_first_order_goodput():
    c, m = 60.0, 10 * 3600.0
    best = faults.young_daly(c, m)
    assert best == pytest.approx(math.sqrt(2 * c * m))
    g = faults.goodput(best, c, m)
    for tau in (best / 2, best * 0.9, best * 1.1, best * 2):
        assert faults.goodput(tau, c, m) < g


def test_formula_matches_the_simulated_process():
    c, m, r = 60.0, 4 * 3600.0, 120.0
    for tau in (300.0, faults.young_daly(c, m), 3000.0):
        sim = faults.simulate(tau, c, m, r, runs=200, seed=1)
        assert sim == pytest.approx(faults.goodput(tau, c, m, r), abs=0.01)
    assert faults.simulate(600.0, c, m, r, runs=50, seed=3) == faults.simulate(600.0, c, m, r, runs=50, seed=3)


def test_goodput_falls_with_scale():
    c = 120.0
    values = [faults.goodput(faults.young_daly(c, faults.job_mtbf(n)), c, faults.job_mtbf(n), 300) for n in
              (1024, 8192, 65536)]
    assert values == sorted(values, reverse=True) and values[0] > 0.95


def test_refusals():
    with pytest.raises(ValueError, match="interval=0 must be a finite number of seconds > 0"):
        faults.goodput(0, 60, 3600)
    with pytest.raises(ValueError, match="interval=-5 must be a finite number of seconds > 0"):
        faults.simulate(-5, 60, 3600)
    with pytest.raises(ValueError, match="checkpoint=0 must be a finite number of seconds > 0"):
        faults.young_daly(0, 3600)
    with pytest.raises(ValueError, match="gpus=0 must be an integer >= 1"):
        faults.job_mtbf(0)
    with pytest.raises(ValueError, match="restart=-1 must be a finite number of seconds >= 0"):
        faults.goodput(10, 1, 100, restart=-1)
