"""Halving-doubling: 2 log2(p) alpha + 2 (p-1)/p n beta on the clock for p = 2^k, plus the
fold 2 T(n) for other p."""
import pytest

from allreduce_cases import L, NUMEL, clocked, closed_form, data
from commlab.arch import halving_doubling
from commlab.net import Network
from commlab.runtime import launch

N = 4 * NUMEL


@pytest.mark.parametrize("p", range(2, 17))
def test_clock_equals_the_closed_form(p):
    assert clocked("halving_doubling", p) == pytest.approx(closed_form("halving_doubling", p), rel=1e-2)


@pytest.mark.parametrize("p", [2, 4, 8, 16])
def test_powers_of_two(p):
    k = p.bit_length() - 1
    assert closed_form("halving_doubling", p) == pytest.approx(2 * k * L.alpha + 2 * (p - 1) / p * N * L.beta)


@pytest.mark.parametrize("p,q", [(3, 2), (6, 4), (7, 4), (12, 8)])
def test_other_p_fold_into_a_power_of_two(p, q):
    assert closed_form("halving_doubling", p) == pytest.approx(2 * L.time(N) + closed_form("halving_doubling", q))


def _traffic(comm):
    s0 = comm.stats.snapshot()
    halving_doubling.allreduce(comm, data(comm.rank))
    return comm.stats - s0


def test_log_p_messages_and_the_ring_bandwidth():
    p, k = 8, 3
    for s in launch(_traffic, p):
        assert s.msgs_sent == 2 * k and s.bytes_sent == 2 * (p - 1) / p * N


def test_extra_ranks_send_their_vector_once():
    stats = launch(_traffic, 6)
    for r in (4, 5):  # folded into ranks 0 and 1
        assert stats[r].msgs_sent == stats[r].msgs_recv == 1 and stats[r].bytes_sent == N
    assert stats[0].msgs_sent == 2 * 2 + 1  # its own exchanges and the result back


def _clock_after_allreduce(comm):  # at module level: a fork server can only start what it can import
    halving_doubling.allreduce(comm, data(comm.rank))
    return comm.now


def test_the_same_simulated_time_on_gloo():
    net = Network(L)
    assert launch(_clock_after_allreduce, 3, runtime="gloo", net=net) == launch(_clock_after_allreduce, 3, net=net)
