"""Seeded random stragglers."""
import pytest

from commlab.net import Network, Stragglers


def test_seeded_pattern_and_probability():
    s = Stragglers(prob=0.25, factor=4.0, seed=3)
    draws = [s(r, k) for r in range(4) for k in range(2000)]
    assert draws == [Stragglers(prob=0.25, factor=4.0, seed=3)(r, k) for r in range(4) for k in range(2000)]
    assert set(draws) == {1.0, 4.0} and abs(draws.count(4.0) / len(draws) - 0.25) < 0.02
    assert [s(0, k) for k in range(50)] != [Stragglers(prob=0.25, factor=4.0, seed=4)(0, k) for k in range(50)]


def test_factor_range_and_ranks():
    s = Stragglers(prob=1.0, factor=(2.0, 3.0), ranks=[1])
    assert all(2.0 <= s(1, k) <= 3.0 for k in range(100)) and s(0, 5) == 1.0
    assert "ranks=[1]" in repr(s)


def test_network_applies_the_factor_per_compute_call():
    net = Network("10GbE", slowdown=Stragglers(prob=0.5, factor=10.0, seed=0))
    clock = net.clock(2)
    for _ in range(20):
        clock.compute(seconds=1.0)
    assert clock.now == pytest.approx(sum(net.slowdown_of(2, k) for k in range(20)))
    assert Network(slowdown={1: 3.0}).slowdown_of(1, 7) == 3.0 and Network().slowdown_of(0, 0) == 1.0


def test_bad_arguments():
    with pytest.raises(ValueError, match="prob must be a probability"):
        Stragglers(prob=1.5)
    with pytest.raises(ValueError, match="factor must be > 0"):
        Stragglers(factor=(3.0, 2.0))
    with pytest.raises(TypeError, match="slowdown must be a"):
        Network(slowdown=[1, 2])
