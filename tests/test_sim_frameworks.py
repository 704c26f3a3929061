"""sim.frameworks: the cost per operation, and each constant solved again from its one cell."""
import pytest

from commlab import sim
from commlab.sim.frameworks import CALIBRATION, FRAMEWORKS, Framework, framework


def test_cost_per_message_and_per_partition():
    assert FRAMEWORKS["ideal"].cost(1e9) == 0
    assert FRAMEWORKS["horovod"].cost(1) == FRAMEWORKS["horovod"].cost(1e9) == pytest.approx(1.08e-3)
    byteps = FRAMEWORKS["byteps"]
    assert byteps.cost(1) == byteps.per_op and byteps.cost(4_096_001) == 2 * byteps.per_op
    assert FRAMEWORKS["bytescheduler"].per_op == FRAMEWORKS["horovod"].per_op  # Horovod ops, one per partition
    assert framework("horovod") is FRAMEWORKS["horovod"] and framework(byteps) is byteps
    with pytest.raises(ValueError, match="unknown framework 'gloo'; valid: ideal, horovod"):
        framework("gloo")


@pytest.mark.parametrize("name", sorted(CALIBRATION))
def test_each_constant_is_the_one_that_reproduces_its_cell(name):
    """Bisection on the per-operation cost, from nothing, lands on the shipped constant."""
    cell, shipped = CALIBRATION[name], FRAMEWORKS[name]
    target = cell["samples_per_s"] / cell["single"]
    cluster = sim.survey.testbed(cell["gpus"])

    def speedup(per_op):
        fw = Framework(name, per_op, shipped.partition)
        return sim.iteration(cell["model"], cluster, method=cell["method"], framework=fw).speedup

    lo, hi = 0.0, 0.01
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if speedup(mid) > target else (lo, mid)
    assert lo == pytest.approx(shipped.per_op, rel=0.01)
