"""The checking helpers, and every public entry point of the simulator, the planner, inference and
faults fed the kinds of bad input a user types: each refuses with ValueError or TypeError naming
the argument, within a second, and nothing hangs."""
import math
import re
import time

import pytest

from commlab import checks
from commlab.infra import faults, inference
from commlab.parallel import planner
from commlab.parallel.zero import zero_bytes, zero_memory
from commlab.sim import fabric, flows
from commlab.sim.devices import profile

BOOL, NAN, INF = True, math.nan, math.inf


# ----- the helpers --------------------------------------------------------------------------
@pytest.mark.parametrize("value,kind", [(0, ValueError), (-2, ValueError), (11, ValueError), (2.0, TypeError),
                                        (True, TypeError), ("3", TypeError), (None, TypeError), (NAN, TypeError)])
def test_count_refuses_what_is_not_a_count(value, kind):
    with pytest.raises(kind, match=rf"^f: k={value!r} must be an integer >= 1 and <= 10"):
        checks.count("k", value, 1, 10, where="f")


def test_count_and_number_accept_and_convert():
    import numpy as np

    assert checks.count("k", np.int64(3)) == 3 and type(checks.count("k", np.int64(3))) is int
    assert checks.number("x", np.float32(0.5), 0, 1) == 0.5
    assert checks.fraction("e", 1) == 1.0 and checks.positive("p", 1e-300) == 1e-300


def test_is_int_and_is_number_are_the_one_test_and_never_take_a_bool():
    import numpy as np

    assert checks.is_int(3) and not checks.is_int(True) and not checks.is_int(3.0) and not checks.is_int("3")
    assert not checks.is_int(np.int64(3)) and checks.is_int(np.int64(3), numpy=True)
    assert not checks.is_int(np.bool_(True), numpy=True)
    assert checks.is_number(3) and checks.is_number(0.5) and not checks.is_number(False) and not checks.is_number("1")
    assert not checks.is_number(np.float32(0.5)) and checks.is_number(np.float32(0.5), numpy=True)


@pytest.mark.parametrize("value", [0, True, 2.0, "3", None])
def test_integer_raises_value_error_in_the_two_wordings(value):
    with pytest.raises(ValueError, match=rf"^f: k={re.escape(repr(value))} must be an integer >= 1$"):
        checks.integer("k", value, where="f")
    with pytest.raises(ValueError, match=rf"^k must be an integer in 1..8, got {re.escape(repr(value))}$"):
        checks.integer("k", value, 1, 8, got=True)
    with pytest.raises(ValueError, match=r"^k must be an integer in 1..8, got 9$"):
        checks.integer("k", 9, 1, 8, got=True)
    assert checks.integer("k", 8, 1, 8) == 8


@pytest.mark.parametrize("value,kind", [(NAN, ValueError), (INF, ValueError), (-INF, ValueError), (0, ValueError),
                                        (1.5, ValueError), (BOOL, TypeError), ("0.5", TypeError), (None, TypeError)])
def test_fraction_is_in_the_half_open_unit_interval(value, kind):
    with pytest.raises(kind, match=r"efficiency=.* must be a finite number > 0 and <= 1"):
        checks.fraction("efficiency", value)


def test_number_names_its_unit_and_open_ends():
    with pytest.raises(ValueError, match=r"^restart=-1 must be a finite number of seconds >= 0$"):
        checks.number("restart", -1, 0, unit="seconds")
    with pytest.raises(ValueError, match=r"^m=1 must be a finite number >= 0 and < 1$"):
        checks.number("m", 1, 0, 1, high_open=True)


def test_choice_lists_the_valid_names():
    assert checks.choice("queue", "fifo", ["fifo", "sjf"]) == "fifo"
    with pytest.raises(ValueError, match=r"^jobs: unknown queue 'lifo'; valid: fifo, sjf$"):
        checks.choice("queue", "lifo", ["fifo", "sjf"], where="jobs")


def test_output_path(tmp_path):
    assert checks.output_path("--out", tmp_path / "a.csv", (".csv",)) == str(tmp_path / "a.csv")
    with pytest.raises(ValueError, match="must end in .csv"):
        checks.output_path("--out", tmp_path / "a.txt", (".csv",))
    with pytest.raises(ValueError, match="does not exist"):
        checks.output_path("--out", tmp_path / "no" / "a.csv")
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(ValueError, match="cannot be written"):
        checks.output_path("--out", tmp_path / "d.csv")
    with pytest.raises(TypeError, match="must be a file path"):
        checks.output_path("--out", 3)


# ----- every entry point, fed bad input ------------------------------------------------------
FT = fabric.fat_tree(4)
MODEL = "llama2-70b"  # 64 heads, 80 layers

BAD = [  # (what is called, the argument the error must name)
    (lambda: flows.ring_allreduce(FT, NAN), "nbytes"),
    (lambda: flows.ring_allreduce(FT, INF), "nbytes"),
    (lambda: flows.ring_allreduce(FT, -1.0), "nbytes"),
    (lambda: flows.ring_allreduce(FT, BOOL), "nbytes"),
    (lambda: flows.ring_allreduce(FT, "1e6"), "nbytes"),
    (lambda: flows.ring_allreduce("fat", 1e6), "fabric"),
    (lambda: flows.ring_allreduce(FT, 1e6, ranks=[]), "ranks"),
    (lambda: flows.ring_allreduce(FT, 1e6, ranks=[0, 0]), "ranks"),
    (lambda: flows.ring_allreduce(FT, 1e6, ranks=[0, 16]), "ranks"),
    (lambda: flows.simulate(FT, [(0, 1, NAN, 0.0)]), "bytes"),
    (lambda: flows.simulate(FT, [(0, 1, 1e6, -1.0)]), "start"),
    (lambda: flows.simulate(FT, [(2, 2, 1e6, 0.0)]), "itself"),
    (lambda: fabric.fat_tree(4, oversubscription=BOOL), "oversubscription"),
    (lambda: fabric.fat_tree(4, oversubscription=0.5), "oversubscription"),
    (lambda: fabric.fat_tree(4, oversubscription=NAN), "oversubscription"),
    (lambda: planner.plan("gpt3-175b", 8, tp=0), "tp"),
    (lambda: planner.plan("gpt3-175b", 8, pp=BOOL), "pp"),
    (lambda: planner.plan("gpt3-175b", 0), "gpus"),
    (lambda: planner.plan("gpt3-175b", 8, efficiency=0), "efficiency"),
    (lambda: planner.plan("gpt3-175b", 8, efficiency=-0.5), "efficiency"),
    (lambda: planner.plan("gpt3-175b", 8, efficiency=NAN), "efficiency"),
    (lambda: planner.plan("gpt3-175b", 8, memory_gb=NAN), "memory_gb"),
    (lambda: planner.plan("gpt3-175b", 8, cluster="dgx"), "cluster"),
    (lambda: planner.plan("gpt-7", 8), "gpt-7"),
    (lambda: planner.candidates("gpt3-175b", 0), "gpus"),
    (lambda: planner.candidates("gpt3-175b", 4.5), "gpus"),
    (lambda: planner.candidates("gpt3-175b", 8, gpus_per_node=0), "gpus_per_node"),
    (lambda: planner.candidates("gpt3-175b", 8, zeros=()), "zeros"),
    (lambda: planner.candidates("gpt3-175b", 8, zeros=(4,)), "zeros"),
    (lambda: planner.candidates("gpt3-175b", 8, batch=0), "batch"),
    (lambda: zero_memory(-1, 8, 1), "psi"),
    (lambda: zero_memory(NAN, 8, 1), "psi"),
    (lambda: zero_memory(7.5e9, 2.5, 1), "n"),
    (lambda: zero_memory(7.5e9, 0, 1), "n"),
    (lambda: zero_memory(7.5e9, 8, BOOL), "stage"),
    (lambda: zero_bytes(7.5e9, 0, 1), "n"),
    (lambda: faults.simulate(1e-9, 60, 3600, runs=2), "interval"),
    (lambda: faults.simulate(600, 60, 3600, runs=0), "runs"),
    (lambda: faults.simulate(600, 60, 3600, work=-1), "work"),
    (lambda: faults.goodput(600, 60, 3600, restart=NAN), "restart"),
    (lambda: faults.goodput(600, 60, INF), "mtbf"),
    (lambda: faults.young_daly(BOOL, 3600), "checkpoint"),
    (lambda: faults.job_mtbf(2.5), "gpus"),
    (lambda: inference.kv_bytes(MODEL, -100), "tokens"),
    (lambda: inference.kv_bytes(MODEL, NAN), "tokens"),
    (lambda: inference.tp_decode(MODEL, 3), "tp"),
    (lambda: inference.tp_decode(MODEL, 8, batch=0), "batch"),
    (lambda: inference.tp_decode(MODEL, 8, context=-1), "context"),
    (lambda: inference.tp_decode(MODEL, 8, device="tpu"), "tpu"),
    (lambda: inference.pipeline_decode(MODEL, 1000), "stages"),
    (lambda: inference.pipeline_decode(MODEL, 0), "stages"),
    (lambda: inference.prefill_time(MODEL, 1000, efficiency=2), "efficiency"),
    (lambda: inference.prefill_time(MODEL, 1000, efficiency=0), "efficiency"),
    (lambda: inference.prefill_time(MODEL, 0), "tokens"),
    (lambda: inference.kv_transfer(MODEL, 1000, tp=3), "tp"),
    (lambda: profile("nonexistent"), "nonexistent"),
    (lambda: profile("resnet50", batch=0), "batch"),
]


@pytest.mark.parametrize("call,name", BAD, ids=[f"{i}-{name}" for i, (_, name) in enumerate(BAD)])
def test_bad_input_is_refused_naming_the_argument_within_a_second(call, name):
    start = time.monotonic()
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert time.monotonic() - start < 1.0
    assert name in str(info.value), str(info.value)


def test_the_trainer_refuses_a_batch_larger_than_a_workers_share():
    from commlab import Trainer

    with pytest.raises(ValueError, match=r"batch_size=100000 is larger than a worker's share of the 1,438 training "
                                         r"samples \(719 each for 2 replicas\); valid: 1\.\.719"):
        Trainer(workers=2, batch_size=100000)


@pytest.mark.parametrize("spec,valid", [("choco(gamma=nan)", "0 < gamma <= 1"), ("choco(gamma=-inf)", "0 < gamma <= 1"),
                                        ("local_sgd(period=inf)", "an integer >= 1")])
def test_nan_and_inf_in_a_spec_are_numbers_the_rule_names(spec, valid):
    from commlab import Trainer

    with pytest.raises(ValueError, match=re.escape(valid)):
        Trainer(sync=spec)
