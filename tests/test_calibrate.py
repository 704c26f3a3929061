"""Calibration: the least-squares fit, and a ping-pong on each CPU runtime."""
import pytest

from commlab.net import LinkModel, calibrate
from commlab.net.calibrate import fit_alpha_beta, ping_pong
from commlab.runtime import launch
from commlab.runtime.threads import ThreadComm, World

SIZES = (8, 1 << 16, 1 << 20, 1 << 23)  # up to 8 MB: the per-byte cost must show above the noise


@pytest.mark.parametrize("alpha,beta", [(2e-5, 8e-10), (1e-3, 1e-9), (0.0, 5e-11), (3e-6, 0.0)])
def test_fit_recovers_alpha_beta_from_exact_data(alpha, beta):
    sizes = [8, 1024, 1 << 14, 1 << 17, 1 << 20, 1 << 22]
    a, b = fit_alpha_beta(sizes, [alpha + beta * n for n in sizes])
    assert a == pytest.approx(alpha, rel=1e-6, abs=1e-12)
    assert b == pytest.approx(beta, rel=1e-6, abs=1e-18)


def test_fit_clips_at_zero():
    sizes = [1e3, 1e4, 1e5]
    a, b = fit_alpha_beta(sizes, [-1e-3 + 1e-8 * n for n in sizes])  # a negative intercept
    assert a == 0.0 and b == pytest.approx(1e-8)
    a, b = fit_alpha_beta(sizes, [1e-3 - 1e-9 * n for n in sizes])  # a negative slope
    assert b == 0.0 and a > 0


def _calibrate(comm):
    link = calibrate(comm, sizes=SIZES, repeats=5)
    return link, comm.rank


@pytest.mark.parametrize("runtime,world", [("threads", 2), ("threads", 3), ("gloo", 2)])
def test_calibrate_returns_one_link_on_every_rank(runtime, world):
    results = launch(_calibrate, world, runtime=runtime, timeout=30)
    links = [link for link, _ in results]
    first = links[0]
    assert isinstance(first, LinkModel)
    # a real measurement: its values depend on the load (a busy machine can hide the slope), so only
    # their validity is checked here; the fit itself is checked on exact data above
    assert first.alpha >= 0 and first.beta >= 0 and first.alpha + first.beta > 0
    assert first.name == f"calibrated({runtime})"
    assert all(link == first for link in links)  # every rank agrees


def test_ping_pong_only_measures_ranks_0_and_1():
    times = launch(lambda comm: ping_pong(comm, sizes=(8, 64), repeats=2, warmup=0), 3)
    assert len(times[0]) == len(times[1]) == 2 and times[2] == []
    assert all(t > 0 for t in times[0] + times[1])


def test_calibrate_needs_two_ranks():
    comm = ThreadComm(World(1, timeout=1.0), rank=0)
    with pytest.raises(ValueError, match="calibrate needs world_size >= 2, got 1"):
        calibrate(comm)
