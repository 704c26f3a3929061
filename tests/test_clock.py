"""The simulated clock: the rules of commlab.net.clock, checked message by message.

A message of n bytes costs T(n) = alpha + n beta; each endpoint sends one message at a
time and receives one at a time (full duplex); compute enters explicitly; a native
collective starts at the max of the clocks and lasts its closed form.
"""
import pytest
import torch

from commlab.net import Clock, LinkModel, Network, as_network, cost, get_link
from commlab.runtime import RankError, launch
from commlab.arch.ring import cost as ring_cost

L = LinkModel(alpha=1e-3, beta=1e-9)
SLOW = LinkModel(alpha=5e-3, beta=4e-9, name="slow")
NUMEL = 84_000  # 336,000 bytes of fp32: the beta term is a third of T(n)
N = 4 * NUMEL
REL = 1e-9


def approx(x):
    return pytest.approx(x, rel=REL, abs=0)


def T(nbytes, link=L):
    return link.time(nbytes)


# ----- point to point --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_p2p_costs_one_message_time(dtype):
    def fn(comm):
        if comm.rank == 0:
            comm.send(torch.zeros(1000, dtype=dtype), 1)
        else:
            comm.recv(0)
        return comm.now, comm.clock.out_free

    (now0, out0), (now1, _) = launch(fn, 2, net=Network(L))
    nbytes = 1000 * torch.zeros(1, dtype=dtype).element_size()
    assert now0 == 0.0  # sending does not advance the sender's clock...
    assert out0 == approx(T(nbytes))  # ...but keeps its outgoing link busy
    assert now1 == approx(T(nbytes)) == approx(cost.p2p(nbytes, L))


def test_ping_pong_round_trip_is_two_message_times():
    def fn(comm):
        if comm.rank == 0:
            comm.send(torch.zeros(NUMEL), 1)
            comm.recv(1)
        else:
            comm.send(comm.recv(0), 0)
        return comm.now

    now = launch(fn, 2, net=Network(L))
    assert now == [approx(2 * T(N)), approx(T(N))]


def test_sender_serializes_its_messages():
    def fn(comm):
        if comm.rank == 0:
            works = [comm.isend(torch.zeros(NUMEL), dst) for dst in (1, 2, 2)]
            for w in works:
                w.wait()
        elif comm.rank == 1:
            comm.recv(0)
        else:
            comm.recv(0)
            comm.recv(0)
        return comm.now

    assert launch(fn, 3, net=Network(L)) == [0.0, approx(T(N)), approx(3 * T(N))]


@pytest.mark.parametrize("p", range(2, 9))
def test_receiver_serializes_incoming_messages(p):
    def fn(comm):
        if comm.rank:
            comm.send(torch.zeros(NUMEL), 0)
            return comm.now
        for src in range(1, p):
            comm.recv(src)
        return comm.now

    assert launch(fn, p, net=Network(L))[0] == approx((p - 1) * T(N))


def test_links_are_full_duplex():
    def fn(comm):
        other = 1 - comm.rank
        w = comm.isend(torch.zeros(NUMEL), other)
        comm.recv(other)
        w.wait()
        return comm.now

    assert launch(fn, 2, net=Network(L)) == [approx(T(N))] * 2


def test_a_later_sender_departs_at_its_own_clock():
    def fn(comm):
        if comm.rank == 0:
            comm.compute(seconds=0.5)
            comm.send(torch.zeros(NUMEL), 1)
        else:
            comm.compute(seconds=2.0)  # already later than the arrival: the message costs no wait
            comm.recv(0)
        return comm.now

    assert launch(fn, 2, net=Network(L)) == [0.5, 2.0]


def test_without_a_network_there_is_no_clock():
    def fn(comm):
        comm.compute(seconds=5.0)  # a no-op
        if comm.rank == 0:
            comm.send(torch.zeros(3), 1)
        else:
            comm.recv(0)
        return comm.clock, comm.now

    assert launch(fn, 2) == [(None, 0.0)] * 2


def test_launch_accepts_a_profile_name_or_link():
    def fn(comm):
        return comm.clock.network.link

    assert launch(fn, 2, net="10gbe") == [get_link("10GbE")] * 2
    assert launch(fn, 2, net=L) == [L] * 2


# ----- compute -----------------------------------------------------------------------------
def test_compute_seconds_and_flops():
    def fn(comm):
        comm.compute(seconds=0.25)
        comm.compute(flops=3e12)
        return comm.now

    assert launch(fn, 2, net=Network(L, flops=1e12)) == [approx(3.25)] * 2


def test_per_rank_slowdown_scales_compute_only():
    def fn(comm):
        comm.compute(seconds=1.0)
        comm.compute(flops=2e9)
        if comm.rank == 0:
            comm.send(torch.zeros(NUMEL), 1)
        else:
            comm.recv(0)
        return comm.now

    net = Network(L, flops=1e9, slowdown={1: 2.5})
    now0, now1 = launch(fn, 2, net=net)
    assert now0 == approx(3.0)
    assert now1 == approx(max(3.0 + T(N), 7.5))  # rank 1's own compute ends later than the arrival


def test_default_compute_rate():
    clock = Clock(Network(L), 0)
    clock.compute(flops=Network(L).flops)
    assert clock.now == 1.0


def test_compute_argument_errors():
    clock = Clock(Network(L, flops=None), 0)
    with pytest.raises(ValueError, match="needs Network\\(flops="):
        clock.compute(flops=1.0)
    with pytest.raises(ValueError, match="exactly one of seconds= or flops="):
        clock.compute()
    with pytest.raises(ValueError, match="exactly one of seconds= or flops="):
        clock.compute(seconds=1.0, flops=1.0)
    with pytest.raises(ValueError, match=">= 0"):
        clock.compute(seconds=-1.0)
    assert clock.now == 0.0


def test_network_validation():
    with pytest.raises(ValueError, match="flops must be a positive"):
        Network(L, flops=0)
    with pytest.raises(ValueError, match="slowdown of rank 3 must be > 0"):
        Network(L, slowdown={3: 0.0})
    with pytest.raises(ValueError, match="unknown link .*; valid: PCIe3"):
        Network("5GbE")
    net = Network("ib", links={"2": "wan"})
    assert net.link is get_link("100GbIB") and net.link_of(2) is get_link("1GbWAN") and net.link_of(0) is net.link


def test_as_network():
    net = Network(L)
    assert as_network(None) is None
    assert as_network(net) is net
    assert as_network(L).link is L
    assert as_network("NVLink").link is get_link("NVLink")


# ----- a slow link -------------------------------------------------------------------------
def test_message_time_uses_the_slower_end():
    net = Network(L, links={2: SLOW})
    assert net.message_time(0, 1, N) == approx(T(N))
    mixed = max(L.alpha, SLOW.alpha) + N * max(L.beta, SLOW.beta)
    assert net.message_time(0, 2, N) == approx(mixed)
    assert net.message_time(2, 1, N) == approx(mixed)

    def fn(comm):
        if comm.rank == 0:
            comm.isend(torch.zeros(NUMEL), 1).wait()
            comm.isend(torch.zeros(NUMEL), 2).wait()
        elif comm.rank == 1:
            comm.recv(0)
        else:
            comm.recv(0)
        return comm.now

    # rank 0's link is busy T(N) with the first message; the second takes the slow time
    assert launch(fn, 3, net=net) == [0.0, approx(T(N)), approx(T(N) + mixed)]


def test_slow_link_of_one_rank_slows_a_native_collective():
    def fn(comm):
        comm.all_reduce(torch.zeros(NUMEL))
        return comm.now

    slow = LinkModel(2e-3, 3e-9)
    got = launch(fn, 4, net=Network(L, links={3: slow}))
    assert got == [approx(ring_cost(N, 4, slow))] * 4


# ----- native collectives ----------------------------------------------------------------
def _collectives(comm, name):
    comm.compute(seconds=0.01 * (comm.rank + 1))  # staggered arrival: start at the max clock
    t = torch.ones(NUMEL)
    if name == "all_reduce":
        comm.all_reduce(t)
    elif name == "all_gather":
        comm.all_gather(t)
    elif name == "broadcast":
        comm.broadcast(t, src=comm.world_size - 1)
    else:
        comm.barrier()
    first = comm.now
    comm.compute(seconds=0.5 if comm.rank == 0 else 0.0)
    comm.all_reduce(torch.ones(NUMEL))  # a second one starts when rank 0 is done
    return first, comm.now


@pytest.mark.parametrize("name", ["all_reduce", "all_gather", "broadcast", "barrier"])
@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_native_collective_is_charged_its_closed_form(name, p):
    results = launch(_collectives, p, net=Network(L), args=(name,))
    expected = {"all_reduce": ring_cost(N, p, L), "all_gather": cost.allgather_ring(N, p, L),
                "broadcast": cost.broadcast(N, p, L), "barrier": cost._log2_ceil(p) * L.alpha}[name]
    assert expected == approx(cost.native(name, N, p, L))
    first = 0.01 * p + expected
    for got_first, got_second in results:
        assert got_first == approx(first)
        assert got_second == approx(first + 0.5 + ring_cost(N, p, L))


def test_collective_waits_for_busy_links():
    def fn(comm):
        if comm.rank == 0:
            comm.isend(torch.zeros(NUMEL), 1).wait()  # rank 0's outgoing link is busy until T(N)
        elif comm.rank == 1:
            comm.recv(0)
        comm.barrier()
        return comm.now

    assert launch(fn, 3, net=Network(L)) == [approx(T(N) + 2 * L.alpha)] * 3


# ----- the clock travels with the message ------------------------------------------------
def _mixed(comm):
    p, r = comm.world_size, comm.rank
    comm.compute(seconds=1e-3 * r)
    works = [comm.isend(torch.zeros(NUMEL // (r + 1)), (r + k) % p) for k in (1, 2)]
    for k in (1, 2):
        comm.recv((r - k) % p)
    for w in works:
        w.wait()
    comm.all_reduce(torch.zeros(100))
    if r:
        comm.send(torch.zeros(NUMEL), 0)
    else:
        for src in range(1, p):
            comm.recv(src)
    return comm.now


def test_gloo_gives_the_same_simulated_time_as_threads():
    net = Network(L, links={1: SLOW}, slowdown={2: 3.0})
    threads = launch(_mixed, 4, net=net)
    gloo = launch(_mixed, 4, runtime="gloo", net=net)
    assert gloo == threads  # bit for bit: the departure time is in the message header
    assert max(threads) > 0


def test_clock_errors_surface_through_launch():
    with pytest.raises(RankError, match="needs Network\\(flops="):
        launch(lambda comm: comm.compute(flops=1.0), 2, net=Network(L, flops=None))


# ----- nodes: a fast link inside a node --------------------------------------------------------
FAST = LinkModel(alpha=1e-5, beta=1e-10, name="fast")


def test_messages_inside_a_node_use_the_intra_link():
    net = Network(L, ranks_per_node=2, intra_link=FAST)
    assert net.message_time(0, 1, N) == approx(T(N, FAST)) == approx(net.message_time(3, 2, N))
    assert net.message_time(1, 2, N) == approx(T(N)) == approx(net.message_time(0, 3, N))
    assert net.same_node(4, 5) and not net.same_node(5, 6)

    def fn(comm):
        if comm.rank == 0:
            comm.isend(torch.zeros(NUMEL), 1).wait()  # same node
            comm.isend(torch.zeros(NUMEL), 2).wait()  # next node
        elif comm.rank in (1, 2):
            comm.recv(0)
        return comm.now

    assert launch(fn, 3, net=net) == [0.0, approx(T(N, FAST)), approx(T(N, FAST) + T(N))]


def test_without_nodes_nothing_changes():
    net = Network(L)
    assert net.ranks_per_node is None and net.intra_link is None and not net.same_node(0, 1)
    assert net.message_time(0, 1, N) == approx(T(N))


def test_node_arguments_go_together():
    with pytest.raises(ValueError, match="give both ranks_per_node= and intra_link="):
        Network(L, ranks_per_node=4)
    with pytest.raises(ValueError, match="give both ranks_per_node= and intra_link="):
        Network(L, intra_link="NVLink")
    with pytest.raises(ValueError, match="ranks_per_node must be an integer >= 1, got 0"):
        Network(L, ranks_per_node=0, intra_link="NVLink")
    net = Network("10GbE", ranks_per_node=8, intra_link="nvlink")
    assert net.intra_link is get_link("NVLink") and "8 ranks per node on NVLink" in repr(net)


def test_native_collective_goes_at_the_pace_of_the_slower_link():
    def fn(comm):
        comm.all_reduce(torch.zeros(NUMEL))
        return comm.now

    slow_intra = LinkModel(2e-3, 3e-9)
    assert launch(fn, 4, net=Network(L, ranks_per_node=2, intra_link=FAST)) == [approx(ring_cost(N, 4, L))] * 4
    assert launch(fn, 4, net=Network(L, ranks_per_node=2, intra_link=slow_intra)) == [
        approx(ring_cost(N, 4, slow_intra))] * 4


# ----- replay: a schedule timed without running it --------------------------------------------
def test_replay_gives_what_the_clock_gives():
    from commlab.net.clock import replay

    def fn(comm):  # rank 0 sends to 1 and 2; 1 passes it on to 2; 2 replies to 0
        if comm.rank == 0:
            works = [comm.isend(torch.zeros(NUMEL), 1), comm.isend(torch.zeros(NUMEL // 2), 2)]
            comm.recv(2)
            for w in works:
                w.wait()
        elif comm.rank == 1:
            comm.send(comm.recv(0), 2)
        else:
            comm.recv(0)
            comm.recv(1)
            comm.send(torch.zeros(10), 0)
        return comm.now

    net = Network(L, links={2: SLOW})
    programs = [[("send", 1, 0, N), ("send", 2, 0, N / 2), ("recv", 2, 0, 40)],
                [("recv", 0, 0, N), ("send", 2, 0, N)],
                [("recv", 0, 0, N / 2), ("recv", 1, 0, N), ("send", 0, 0, 40)]]
    assert replay(programs, net) == [approx(t) for t in launch(fn, 3, net=net)]


def test_replay_reports_a_deadlock():
    from commlab.net.clock import replay

    with pytest.raises(ValueError, match=r"deadlocks: rank 0 waits for \('recv', 1, 0, 8\) \(ranks stuck: \[0, 1\]\)"):
        replay([[("recv", 1, 0, 8)], [("recv", 0, 0, 8)]], L)
    with pytest.raises(ValueError, match="measure_compute=False"):
        replay([[]], Network(L, measure_compute=True))
