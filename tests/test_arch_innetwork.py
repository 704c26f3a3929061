"""commlab.arch.innetwork: the closed form's parts (wire bytes, the slot pool's window, the
limits of the speedup over a ring) and its refusals."""
import pytest

from commlab.arch import ring
from commlab.net.link import LinkModel
from commlab.arch.innetwork import HEADER, ina_speedup, ina_time, ina_wire_bytes

LINK = LinkModel(3e-6, 1 / 12.5e9)


def test_wire_bytes_count_every_packet_and_header():
    assert ina_wire_bytes(256 * 10, 64) == 10 * (256 + HEADER)
    assert ina_wire_bytes(256 * 10 + 4, 64) == 11 * (256 + HEADER)  # a partial chunk is a packet


def test_time_is_bandwidth_bound_with_a_large_pool_and_window_bound_with_a_small_one():
    n = 64e6
    big = ina_time(n, LINK, slots=4096)
    assert big == pytest.approx(2 * LINK.alpha + ina_wire_bytes(n) * LINK.beta)
    small = ina_time(n, LINK, slots=8)
    assert small == pytest.approx(2 * LINK.alpha + ina_wire_bytes(n) / (8 * (256 + HEADER) / (2 * LINK.alpha)))


def test_speedup_limits():
    p = 8
    large = ina_speedup(1e9, p, LINK, slots=4096)
    assert large == pytest.approx(2 * (p - 1) / p * 256 / (256 + HEADER), rel=0.01)
    small = ina_speedup(256, p, LINK)
    assert small == pytest.approx(ring.cost(256, p, LINK) / ina_time(256, LINK))
    assert p - 2 < small < p  # 2 (p-1) start-ups against one round trip
    assert ina_speedup(1e6, 32, LINK) > ina_speedup(1e6, 4, LINK)


def test_refusals():
    with pytest.raises(ValueError, match="slots=0 must be > 0"):
        ina_time(1e6, LINK, slots=0)
    with pytest.raises(ValueError, match="workers=1 must be an integer >= 2"):
        ina_speedup(1e6, 1, LINK)
