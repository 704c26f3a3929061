"""Exercise checks: open, right and wrong answers; they print and never raise."""
import pytest
import torch

from commlab.net import speedup
from commlab.chapters.exercises import ch00, ch01, check_function, check_number
from commlab.net import cost
from commlab.net.link import get_link
from commlab.runtime import launch
from exercise_contract import assert_check_contract, assert_unanswered
from commlab.arch.ring import cost as ring_cost

RESNET50 = (25_600_000, 24.5e9)


def _allreduce_bytes():
    """Measure it: bytes rank 0 sends in comm.all_reduce of 1e6 fp32 values on 4 ranks."""
    def f(comm):
        comm.all_reduce(torch.zeros(1_000_000))
        return comm.stats.bytes_sent
    return launch(f, 4)[0]


def _max_workers():
    best = 0
    for n in range(1, 257):
        d, c = RESNET50
        t_s = 256 * c / 1e13
        t_m = ring_cost(4 * d, n, get_link("10GbE")) if n > 1 else 0.0
        if t_s / (t_s / n + t_m) / n >= 0.5:
            best = n
    return best


def _speedup16():
    d, c = RESNET50
    lk = get_link("10GbE")
    t_s = 256 * c / 1e13
    t_m = 2 * 15 * lk.alpha + 2 * 15 / 16 * 4 * d * lk.beta
    return t_s / (t_s / 16 + t_m)


RIGHT = {
    ch00.check_allreduce_bytes: lambda: _allreduce_bytes(),
    ch00.check_pingpong_time: lambda: 2 * (30e-6 + 1e6 * 8 / 10e9),
    ch01.check_c2c_ratio: lambda: (2 * 31 / 32) / (8 * 248),
    ch01.check_speedup: _speedup16,
    ch01.check_max_workers: _max_workers,
}
CHECKS = list(RIGHT)
IDS = [c.__name__ for c in CHECKS]


@pytest.mark.parametrize("check", CHECKS, ids=IDS)
def test_check_contract(check, capsys):
    right = RIGHT[check]()
    assert_check_contract(check, right, right * 1.5 + 1, capsys)


def test_ring_sum_unanswered(capsys):
    assert_unanswered(ch00.check_ring_sum, capsys)


def test_expected_values_agree_with_the_library():
    assert _allreduce_bytes() == 2 * 3 / 4 * 4e6
    assert ch01.check_c2c_ratio(speedup.c2c_ratio(248, 8, 32))
    assert _speedup16() == pytest.approx(speedup.speedup(*RESNET50, 256, 16, "10GbE", flops=1e13), rel=1e-12)
    assert ch00.simulated_pingpong(1_000_000) == pytest.approx(RIGHT[ch00.check_pingpong_time](), rel=1e-12)


def test_max_workers_is_exact():
    n = _max_workers()
    assert 1 < n < 256
    assert ch01.check_max_workers(n) and not ch01.check_max_workers(n + 1) and not ch01.check_max_workers(n - 1)


def test_tolerance():
    right = RIGHT[ch01.check_speedup]()
    assert ch01.check_speedup(right * 1.01) is True  # 2% tolerance
    assert ch01.check_speedup(right * 1.03) is False
    assert ch01.check_speedup(str(right)) is True  # numeric strings are numbers


# ----------------------------------------------------------------------------- ring sum
def ring_sum(comm):
    n, r = comm.world_size, comm.rank
    total = torch.tensor(float(r + 1))
    val = total.clone()
    for _ in range(n - 1):
        work = comm.isend(val, (r + 1) % n)
        val = comm.recv((r - 1) % n)
        work.wait()
        total += val
    return total


def allreduce_sum(comm):
    return comm.all_reduce(torch.tensor(float(comm.rank + 1)))


def raising(comm):
    raise RuntimeError("oops")


def off_by_one(comm):
    return ring_sum(comm) + 1


def test_ring_sum_correct(capsys):
    assert ch00.check_ring_sum(ring_sum) is True
    assert "correct" in " ".join(capsys.readouterr().out.split())


def test_ring_sum_with_all_reduce_is_rejected(capsys):
    assert ch00.check_ring_sum(allreduce_sum) is False
    assert "send/recv only" in " ".join(capsys.readouterr().out.split())


def test_ring_sum_that_raises_is_rejected(capsys):
    assert ch00.check_ring_sum(raising) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "raised" in out and "oops" in out


def test_ring_sum_wrong_value_is_rejected(capsys):
    assert ch00.check_ring_sum(off_by_one) is False
    assert "with 1 ranks expected 1.0" in " ".join(capsys.readouterr().out.split())


# ----------------------------------------------------------------------------- helpers
def test_check_number_and_check_function(capsys):
    assert check_number("x", None, 1.0, hint="Try.") is False
    assert "x: not answered yet. Try." in " ".join(capsys.readouterr().out.split())
    assert check_number("x", 0.0, 0.0) is True
    assert check_number("x", 1.0, 1.0, rel=0.0) is True
    assert check_function("f", None, lambda f: None) is False

    def trial(f):
        assert f(2) == 4, "f(2) should be 4"
    assert check_function("f", lambda x: x * 2, trial) is True
    assert check_function("f", lambda x: x + 3, trial) is False
    assert check_function("f", lambda x: 1 / 0, trial) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "f(2) should be 4" in out and "ZeroDivisionError" in out


def test_a_long_hint_is_broken_into_lines_that_fit_the_column(capsys):
    from commlab.chapters.exercises import WIDTH, check_number
    check_number("x", None, 1.0, hint="word " * 60)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 1 and max(map(len, lines)) <= WIDTH
