"""Ring all-reduce: its simulated time is the closed form 2 (p-1) s T(n / ps), it puts
2 (p-1)/p n bytes on each rank's wire, and its two halves work on their own."""
import pytest
import torch

from allreduce_cases import L, NUMEL, clocked, closed_form, data, oracle
from commlab.arch import ring
from commlab.arch.chunks import bounds
from commlab.net import Network
from commlab.runtime import launch

N = 4 * NUMEL


@pytest.mark.parametrize("segments", [1, 3])
@pytest.mark.parametrize("p", range(2, 17))
def test_clock_equals_the_closed_form(p, segments):
    now = clocked("ring", p, segments=segments)
    assert now == pytest.approx(closed_form("ring", p, segments=segments), rel=1e-2)
    assert closed_form("ring", p, segments=segments) == pytest.approx(
        2 * (p - 1) * segments * L.alpha + 2 * (p - 1) / p * N * L.beta)


def _traffic(comm, segments):
    x = data(comm.rank)
    s0 = comm.stats.snapshot()
    ring.allreduce(comm, x, segments=segments)
    return comm.stats - s0


@pytest.mark.parametrize("p,segments", [(2, 1), (5, 1), (6, 4)])
def test_each_rank_sends_two_p_minus_one_chunks(p, segments):
    for stats in launch(_traffic, p, args=(segments,)):
        assert stats.msgs_sent == stats.msgs_recv == 2 * (p - 1) * segments
        assert stats.bytes_sent == pytest.approx(2 * (p - 1) / p * N, abs=2 * p * segments * 4)


def _clock_after_allreduce(comm):  # at module level: a fork server can only start what it can import
    ring.allreduce(comm, data(comm.rank), segments=2)
    return comm.now


def test_the_same_simulated_time_on_gloo():
    net = Network(L)
    gloo = launch(_clock_after_allreduce, 3, runtime="gloo", net=net)
    assert gloo == launch(_clock_after_allreduce, 3, net=net)  # bit for bit


def _halves(comm, n, ranks):
    x = data(comm.rank, (n,))
    if comm.rank not in ranks:
        return None
    chunk = ring.reduce_scatter(comm, x, ranks=ranks).clone()
    return chunk, ring.all_gather(comm, x, ranks=ranks)


@pytest.mark.parametrize("n", [0, 4, 29])
def test_reduce_scatter_leaves_position_i_with_chunk_i(n):
    ranks = [4, 1, 3]  # a group, in this order of positions
    results = launch(_halves, 5, args=(n, ranks))
    want = sum(data(r, (n,)) for r in ranks)
    for i, r in enumerate(ranks):
        chunk, full = results[r]
        a, b = bounds(n, len(ranks))[i]
        assert torch.equal(chunk, want[a:b]) and torch.equal(full, want)
    assert results[0] is None and results[2] is None


def test_all_gather_pieces_of_any_length():
    def body(comm):
        return ring.all_gather_pieces(comm, torch.arange(comm.rank * 2, dtype=torch.int32))

    want = [torch.arange(r * 2, dtype=torch.int32) for r in range(4)]
    for pieces in launch(body, 4):
        assert all(torch.equal(a, b) for a, b in zip(pieces, want))


def test_one_rank_is_a_no_op():
    def body(comm):
        return ring.allreduce(comm, data(0, (7,)), segments=3), comm.stats.msgs_sent

    (x, msgs), = launch(body, 1)
    assert torch.equal(x, oracle(1, "sum", (7,))) and msgs == 0


# ----- the replay of all_gather_pieces, for a rendezvous that sends no messages ----------------
def _gather_both_ways(comm, shared):
    comm.compute(seconds=1e-4 * (comm.rank + 1))  # unequal clocks before the gather
    piece = torch.arange(5 + 7 * comm.rank, dtype=torch.float32)  # a different length per rank
    if shared:
        got = comm.gather_shared(piece, ring.replay_all_gather_pieces, lambda t: t * 2)
    else:
        got = [t * 2 for t in ring.all_gather_pieces(comm, piece)]
    return [t.tolist() for t in got], comm.stats.snapshot(), comm.now, comm.clock.out_free, comm.clock.in_free


@pytest.mark.parametrize("n", [2, 3, 5])
def test_the_replay_counts_and_times_the_rings_messages(n):
    """The threads runtime's rendezvous (Comm.gather_shared) with the ring's replay gives every rank
    what all_gather_pieces sending its messages gives."""
    net = Network("10GbE", slowdown={1: 3.0})
    shared = launch(_gather_both_ways, n, args=(True,), net=net)
    ring = launch(_gather_both_ways, n, args=(False,), net=net)
    assert shared == ring  # the pieces, every rank's bytes and messages, and its clock bit for bit
