"""The speedup and C2C model of chapter 01 against its closed forms."""
import math

import pytest

from commlab.net import speedup
from commlab.net import cost
from commlab.net.link import PROFILES, LinkModel, get_link
from commlab.arch.ring import cost as ring_cost

RESNET50 = (25_600_000, 24.5e9)


def test_ring_factor():
    assert speedup.ring_factor(1) == 0.0
    assert speedup.ring_factor(2) == 1.0
    assert speedup.ring_factor(4) == 1.5
    assert speedup.ring_factor(32) == 2 * 31 / 32
    assert all(speedup.ring_factor(n) < 2 for n in range(1, 1000))


def test_c2c_ratio_closed_form():
    # BERT-Large at 32 workers, M = 8 samples per worker, intensity I = 248 (Shi et al. 2021)
    assert speedup.c2c_ratio(248, 8, 32) == pytest.approx((2 * 31 / 32) / (8 * 248), rel=1e-15)
    assert speedup.c2c_ratio(470, 32, 1) == 0.0
    # doubling M or I halves the ratio
    assert speedup.c2c_ratio(248, 16, 32) == pytest.approx(speedup.c2c_ratio(248, 8, 32) / 2)
    assert speedup.c2c_ratio(496, 8, 32) == pytest.approx(speedup.c2c_ratio(248, 8, 32) / 2)


@pytest.mark.parametrize("link", list(PROFILES))
def test_speedup_at_one_worker_is_one(link):
    assert speedup.speedup(*RESNET50, 256, 1, link) == 1.0
    st = speedup.step_time(*RESNET50, 256, 1, link)
    assert st.comm == 0.0 and st.efficiency == 1.0


@pytest.mark.parametrize("link", ["10GbE", "100GbIB", "NVLink", "1GbWAN"])
def test_speedup_at_most_n_and_compute_part_monotone(link):
    workers = [1, 2, 3, 4, 8, 16, 64, 256]
    steps = [speedup.step_time(*RESNET50, 256, n, link, flops=1e13) for n in workers]
    for n, st in zip(workers, steps):
        assert 0 < st.speedup <= n
        assert st.efficiency <= 1
        assert st.total == st.compute + st.comm
    computes = [st.compute for st in steps]
    assert all(b < a for a, b in zip(computes, computes[1:]))
    assert speedup.speedup_curve(*RESNET50, 256, workers, link, flops=1e13) == [st.speedup for st in steps]


def test_speedup_ideal_on_free_link():
    free = LinkModel(0.0, 0.0, "free")
    for n in [1, 2, 7, 64]:
        assert speedup.speedup(*RESNET50, 256, n, free) == pytest.approx(n)


@pytest.mark.parametrize("n", [2, 4, 16, 32])
@pytest.mark.parametrize("link", ["10GbE", "100GbIB"])
def test_step_time_components(n, link):
    d, c = RESNET50
    st = speedup.step_time(d, c, 256, n, link, flops=1e13)
    t_s = 256 * c / 1e13
    assert st.single == pytest.approx(t_s, rel=1e-15)
    assert st.compute == pytest.approx(t_s / n, rel=1e-15)
    assert st.comm == ring_cost(4 * d, n, get_link(link))
    lk = get_link(link)
    assert st.comm == pytest.approx(2 * (n - 1) * lk.alpha + 2 * (n - 1) / n * 4 * d * lk.beta, rel=1e-12)
    assert st.speedup == pytest.approx(t_s / (t_s / n + st.comm), rel=1e-15)
    assert st.workers == n
    # fp16 gradients halve the bandwidth term
    half = speedup.step_time(d, c, 256, n, link, flops=1e13, bytes_per_value=2)
    assert half.comm == ring_cost(2 * d, n, get_link(link))


@pytest.mark.parametrize("call", [
    lambda: speedup.ring_factor(0),
    lambda: speedup.ring_factor(-2),
    lambda: speedup.c2c_ratio(0, 8, 32),
    lambda: speedup.c2c_ratio(-1, 8, 32),
    lambda: speedup.c2c_ratio(248, 0, 32),
    lambda: speedup.c2c_ratio(248, 8, 0),
    lambda: speedup.step_time(0, 1e9, 256, 4, "10GbE"),
    lambda: speedup.step_time(1000, 1e9, 0, 4, "10GbE"),
    lambda: speedup.step_time(1000, 1e9, 256, 0, "10GbE"),
    lambda: speedup.step_time(1000, 1e9, 256, -4, "10GbE"),
    lambda: speedup.step_time(1000, 0, 256, 4, "10GbE"),
    lambda: speedup.step_time(1000, 1e9, 256, 4, "10GbE", flops=0),
    lambda: speedup.step_time(1000, 1e9, 256, 4, "no-such-link"),
    lambda: speedup.speedup(1000, 1e9, 256, 0, "10GbE"),
])
def test_bad_arguments_raise_value_error(call):
    with pytest.raises(ValueError):
        call()
