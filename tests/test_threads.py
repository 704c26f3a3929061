"""The threads runtime: determinism, closures, private message copies, World.exchange."""
import os
import threading
import time

import pytest
import torch

from commlab.runtime import Aborted, CommTimeout, launch
from commlab.runtime.thread_ranks import caller_core
from commlab.runtime.threads import ThreadComm, World


def _reduce_random(comm, numel):
    g = torch.Generator().manual_seed(1234 + comm.rank)
    x = torch.randn(numel, generator=g) * 10 ** (comm.rank % 4)  # mixed magnitudes: order matters
    out = {}
    for op in ("sum", "avg", "prod", "max"):
        out[op] = comm.all_reduce(x.clone(), op=op)
    return out


def test_all_reduce_is_bit_identical_across_launches():
    numel = 4097
    runs = [launch(_reduce_random, 8, args=(numel,)) for _ in range(3)]
    # the oracle: contributions combined in rank order, in float32
    xs = [torch.randn(numel, generator=torch.Generator().manual_seed(1234 + r)) * 10 ** (r % 4) for r in range(8)]
    seq = xs[0].clone()
    for x in xs[1:]:
        seq += x
    for run in runs:
        for rank_out in run:
            for op in ("sum", "avg", "prod", "max"):
                assert torch.equal(rank_out[op], runs[0][0][op]), op
            assert torch.equal(rank_out["sum"], seq)
            assert torch.equal(rank_out["avg"], seq / 8)


def test_results_do_not_alias_between_ranks():
    def fn(comm):
        t = torch.ones(3)
        comm.all_reduce(t)
        t.add_(comm.rank)  # must not leak into another rank's tensor
        comm.barrier()
        g = comm.all_gather(torch.full((2,), float(comm.rank)))
        g[0].fill_(-1.0)
        comm.barrier()
        return t, g

    results = launch(fn, 4)
    for r, (t, g) in enumerate(results):
        assert t.tolist() == [4.0 + r] * 3
        assert [x.tolist() for x in g[1:]] == [[float(k)] * 2 for k in range(1, 4)]


def test_closures_defined_in_a_test_work():
    scale = 3.0
    log = []
    lock = threading.Lock()

    def helper(x):
        return x * scale

    def fn(comm, offset):
        with lock:
            log.append(comm.rank)
        t = helper(torch.tensor([float(comm.rank + offset)]))
        return comm.all_reduce(t).item()

    results = launch(fn, 4, args=(1,))
    assert results == [scale * sum(r + 1 for r in range(4))] * 4
    assert sorted(log) == [0, 1, 2, 3]
    assert launch(lambda comm: comm.rank * scale, 3) == [0.0, 3.0, 6.0]


def test_message_is_a_private_copy():
    def fn(comm):
        if comm.rank == 0:
            t = torch.zeros(4)
            comm.isend(t, 1).wait()
            t.fill_(9.0)  # after the send: the receiver must still see zeros
            comm.barrier()
            return None
        comm.barrier()
        got = comm.recv(0)
        return got.tolist()

    assert launch(fn, 2)[1] == [0.0] * 4


def test_ranks_run_as_named_threads():
    names = launch(lambda comm: threading.current_thread().name, 3)
    assert names == ["commlab-rank0", "commlab-rank1", "commlab-rank2"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="threads are listed on Linux only")
def test_launch_returns_after_every_thread_it_started_has_ended():
    """A thread still exiting after launch may hold MKL's allocator lock, which a process forked
    then inherits held (its first matrix product then spins): none may outlive launch."""
    def work(comm):
        a = torch.randn(256, 256)
        return float((a @ a).sum()) + float(torch.randn(64, 8).mm(torch.randn(8, 64)).sum())

    for _ in range(5):
        before = set(os.listdir("/proc/self/task"))
        launch(work, 2)
        assert set(os.listdir("/proc/self/task")) <= before


needs_affinity = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="threads are placed on Linux only")


@needs_affinity
def test_caller_core_is_one_core_this_process_may_use():
    core = caller_core()
    assert len(core) == 1 and core <= os.sched_getaffinity(0)


@needs_affinity
def test_one_core_places_every_rank_on_the_same_core_and_leaves_the_caller_alone():
    before = os.sched_getaffinity(0)
    placed = launch(lambda comm: os.sched_getaffinity(0), 4, one_core=True)
    assert len(placed[0]) == 1 and all(p == placed[0] for p in placed)
    assert os.sched_getaffinity(0) == before
    assert launch(lambda comm: os.sched_getaffinity(0), 2) == [before, before]  # the default: no placement


def test_one_core_changes_no_result():
    one, both = launch(_reduce_random, 4, args=(1000,), one_core=True), launch(_reduce_random, 4, args=(1000,))
    assert all(torch.equal(a[op], b[op]) for a, b in zip(one, both) for op in a)


# ----- World.exchange ------------------------------------------------------------------------
def _run_ranks(world, body):
    """Run body(rank) on world.world_size threads; return results and exceptions by rank."""
    results, errors = {}, {}

    def target(rank):
        try:
            results[rank] = body(rank)
        except BaseException as e:  # noqa: BLE001
            errors[rank] = e

    threads = [threading.Thread(target=target, args=(r,)) for r in range(world.world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    return results, errors


def test_exchange_combines_once_in_rank_order_and_shares_the_result():
    world = World(4, timeout=5.0)
    calls = []

    def combine(values):
        calls.append(list(values))
        return {"sum": sum(values), "values": tuple(values)}

    def body(rank):
        time.sleep(0.002 * (3 - rank))  # arrive in reverse rank order
        return [world.exchange(rank, rank * 10 + k, combine, "test") for k in range(3)]

    results, errors = _run_ranks(world, body)
    assert not errors
    assert calls == [[0 + k, 10 + k, 20 + k, 30 + k] for k in range(3)]  # once per round, by rank
    for k in range(3):
        first = results[0][k]
        assert first == {"sum": 60 + 4 * k, "values": (k, 10 + k, 20 + k, 30 + k)}
        assert all(results[r][k] is first for r in range(4))  # the very same object
    assert world.generation == 3 and world.arrived == {}


def test_exchange_with_one_rank_returns_at_once():
    world = World(1, timeout=0.1)
    assert world.exchange(0, 5, lambda v: v[0] + 1, "solo") == 6


def test_exchange_timeout_names_the_ranks_still_missing():
    world = World(3, timeout=0.5)

    def body(rank):
        if rank == 2:
            return "absent"
        if rank == 1:
            time.sleep(0.1)  # rank 0 arrives first, rank 1 later: only rank 2 is missing at the end
        return world.exchange(rank, rank, sum, "the test exchange")

    results, errors = _run_ranks(world, body)
    assert results == {2: "absent"}
    for rank in (0, 1):
        assert isinstance(errors[rank], CommTimeout)
        msg = str(errors[rank])
        assert f"rank {rank} waited 0.5 s for the test exchange" in msg
        assert "ranks not there yet: [2]" in msg


def test_exchange_leaves_on_abort():
    world = World(2, timeout=30.0)

    def body(rank):
        if rank == 1:
            time.sleep(0.1)
            world.abort.set()
            return "aborter"
        return world.exchange(rank, rank, sum, "never completes")

    start = time.monotonic()
    results, errors = _run_ranks(world, body)
    assert time.monotonic() - start < 5
    assert results == {1: "aborter"}
    assert isinstance(errors[0], Aborted)


def test_thread_comm_recv_times_out_naming_the_peer():
    comm = ThreadComm(World(2, timeout=0.2), rank=0)
    with pytest.raises(CommTimeout, match=r"rank 0 waited 0.2 s for a message from rank 1 \(tag 4\)"):
        comm.recv(1, tag=4)


def test_recv_first_takes_the_earliest_simulated_arrival_not_the_real_one():
    import time as _time

    from commlab.net import Network

    def body(comm):
        if comm.rank == 0:
            order, left = [], {1, 2, 3}
            while left:  # a source is listed only while it still owes a message
                src, _ = comm.recv_first(left, tag=5)
                order.append(src)
                left.discard(src)
            return order
        comm.compute(seconds={1: 3.0, 2: 1.0, 3: 2.0}[comm.rank])  # simulated departure order 2, 3, 1
        _time.sleep(0.05 * (4 - comm.rank))  # real order 3, 2, 1
        comm.send(torch.ones(2), 0, tag=5)

    assert launch(body, 4, net=Network("10GbE"))[0] == [2, 3, 1]
    assert launch(body, 4)[0] == [1, 2, 3]  # without a clock: ties go to the lowest rank


def test_recv_first_times_out_naming_the_silent_source():
    from commlab.runtime.errors import RankError

    def body(comm):
        if comm.rank == 0:
            comm.recv_first([1, 2])
        elif comm.rank == 1:
            comm.send(torch.ones(1), 0)

    with pytest.raises(RankError, match=r"none yet from \[2\]"):
        launch(body, 3, timeout=0.5)


# ----- gather_shared: one rendezvous in place of the ring's messages ------------------------
def _shared_identity(comm):
    got = comm.gather_shared(torch.full((3,), float(comm.rank)), lambda comms, pieces: None)
    return [id(t) for t in got], torch.stack(got).tolist()


def test_gather_shared_hands_every_rank_the_same_tensors():
    out = launch(_shared_identity, 3)
    assert out[0] == out[1] == out[2] and out[0][1] == [[0.0] * 3, [1.0] * 3, [2.0] * 3]


def _shared_or_none(comm):
    return comm.gather_shared(torch.zeros(2), lambda comms, pieces: None) is None


def test_gather_shared_declines_where_the_messages_must_really_be_sent():
    from commlab.net import Network

    assert launch(_shared_or_none, 1) == [True]  # nothing to gather
    assert launch(_shared_or_none, 2, net=Network("10GbE", measure_compute=True)) == [True, True]  # real CPU time
    assert launch(_shared_or_none, 2, runtime="gloo") == [True, True]  # separate processes
