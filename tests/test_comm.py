"""Point-to-point and collective semantics of Comm, on both CPU runtimes (threads and gloo).

Every check runs inside the ranks and the results come back through ``launch``; the
oracle is plain torch arithmetic in the test process.
"""
import os
import time

import pytest
import torch

from commlab.runtime import RankError, launch, nbytes
from commlab.runtime.comm import REDUCE_OPS, binomial_children
from commlab.runtime.threads import ThreadComm, World

RUNTIMES = ["threads", "gloo"]
WORLDS = [(rt, n) for rt in RUNTIMES for n in (2, 3, 4)]


def payloads(seed: int) -> dict:
    """One tensor of every kind a rank may send; values depend on the seed."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 5, generator=g)
    return {
        "fp32": x,
        "fp64": x.double() + 1e-12,  # not representable in fp32
        "fp16": x.half(),
        "bf16": x.bfloat16(),
        "int64": torch.randint(-5, 5, (4, 2), generator=g) + 2**62,  # not representable in fp64
        "int32": torch.randint(-1000, 1000, (7,), generator=g, dtype=torch.int32),
        "uint8": torch.randint(0, 256, (2, 2, 2), generator=g, dtype=torch.uint8),
        "bool": x > 0,
        "scalar": torch.tensor(2.5 + seed),
        "scalar_int": torch.tensor(seed, dtype=torch.int64),
        "empty": torch.empty(0, 3),
        "empty_int": torch.empty(4, 0, 2, dtype=torch.int64),
        "transposed": x.t(),  # non-contiguous
    }


def _same(got: torch.Tensor, want: torch.Tensor) -> bool:
    return got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)


# ----- point to point ----------------------------------------------------------------------
def _send_payloads(comm):
    """Rank 0 sends every payload to every other rank; the others return what they got."""
    if comm.rank == 0:
        for dst in range(1, comm.world_size):
            for t in payloads(dst).values():
                comm.isend(t, dst).wait()
        return None, comm.stats.snapshot()
    got = {k: comm.recv(0) for k in payloads(comm.rank)}
    return got, comm.stats.snapshot()


@pytest.mark.parametrize("runtime,world", WORLDS)
def test_send_recv_preserves_dtype_shape_values(runtime, world):
    results = launch(_send_payloads, world, runtime=runtime)
    for dst in range(1, world):
        got, _ = results[dst]
        for key, want in payloads(dst).items():
            assert _same(got[key], want), (runtime, dst, key, got[key])
            assert got[key].is_contiguous()


@pytest.mark.parametrize("runtime,world", WORLDS)
def test_p2p_stats_count_exact_payload_bytes(runtime, world):
    results = launch(_send_payloads, world, runtime=runtime)
    per_rank = {dst: sum(t.numel() * t.element_size() for t in payloads(dst).values()) for dst in range(1, world)}
    count = len(payloads(0))
    _, s0 = results[0]
    assert s0.bytes_sent == sum(per_rank.values())
    assert s0.msgs_sent == count * (world - 1)
    assert s0.bytes_recv == 0 and s0.msgs_recv == 0
    for dst in range(1, world):
        _, s = results[dst]
        assert (s.bytes_recv, s.msgs_recv, s.bytes_sent, s.msgs_sent) == (per_rank[dst], count, 0, 0)


def test_nbytes_is_numel_times_element_size():
    assert nbytes(torch.zeros(3, 4)) == 48
    assert nbytes(torch.zeros(5, dtype=torch.bfloat16)) == 10
    assert nbytes(torch.zeros(7, dtype=torch.bool)) == 7
    assert nbytes(torch.zeros(())) == 4
    assert nbytes(torch.zeros(0, 9)) == 0


def _recv_any(comm):
    if comm.rank != 0:
        noise = comm.isend(torch.zeros(1), 0, tag=0)  # another tag: recv_any(tag=3) must skip it
        comm.isend(torch.full((comm.rank + 1,), float(comm.rank)), 0, tag=3).wait()
        noise.wait()
        return None
    seen = []
    for _ in range(comm.world_size - 1):
        src, t = comm.recv_any(tag=3)
        assert t.shape == (src + 1,) and torch.all(t == src), (src, t)
        seen.append(src)
    for src in range(1, comm.world_size):
        assert torch.equal(comm.recv(src, tag=0), torch.zeros(1))
    return sorted(seen)


@pytest.mark.parametrize("runtime,world", WORLDS)
def test_recv_any_returns_the_source(runtime, world):
    assert launch(_recv_any, world, runtime=runtime)[0] == list(range(1, world))


def _ring(comm, rounds):
    """Pass values around the ring with isend to next / irecv from prev; every rank sees all."""
    p, r = comm.world_size, comm.rank
    nxt, prv = (r + 1) % p, (r - 1) % p
    cur = torch.tensor([float(r), 10.0 * r])
    seen = [cur]
    for _ in range(rounds):
        pending = comm.irecv(prv)  # post the receive before sending
        sent = comm.isend(cur, nxt)
        cur = pending.wait()
        sent.wait()
        seen.append(cur)
    return [t.tolist() for t in seen]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("world", [3, 4])
def test_isend_irecv_ring_exchange(runtime, world):
    results = launch(_ring, world, runtime=runtime, args=(world - 1,))
    for r, seen in enumerate(results):
        want = [[float((r - k) % world), 10.0 * ((r - k) % world)] for k in range(world)]
        assert seen == want


def _ring_blocking_recv(comm):
    """isend to next, then a blocking recv from prev (the pattern the clock tests use)."""
    p, r = comm.world_size, comm.rank
    w = comm.isend(torch.full((3,), float(r)), (r + 1) % p)
    got = comm.recv((r - 1) % p)
    w.wait()
    return got.tolist()


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("world", [3, 4])
def test_isend_then_recv_ring(runtime, world):
    results = launch(_ring_blocking_recv, world, runtime=runtime)
    assert results == [[float((r - 1) % world)] * 3 for r in range(world)]


def _tags(comm):
    if comm.rank == 0:
        works = [comm.isend(torch.full((2,), float(tag)), 1, tag=tag) for tag in (1, 2, 0, 7)]
        for w in works:
            w.wait()
        return None
    return {tag: comm.recv(0, tag=tag).tolist() for tag in (7, 2, 0, 1)}  # a different order


def _fifo(comm):
    if comm.rank == 0:
        works = [comm.isend(torch.tensor([float(i)] * (i + 1)), 1, tag=5) for i in range(6)]
        for w in works:
            w.wait()
        return None
    return [comm.recv(0, tag=5).tolist() for _ in range(6)]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_tags_separate_messages(runtime):
    got = launch(_tags, 2, runtime=runtime)[1]
    assert got == {tag: [float(tag)] * 2 for tag in (7, 2, 0, 1)}


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_same_source_and_tag_is_fifo(runtime):
    assert launch(_fifo, 2, runtime=runtime)[1] == [[float(i)] * (i + 1) for i in range(6)]


# ----- collectives -------------------------------------------------------------------------
def rank_tensor(rank: int, dtype=torch.float32) -> torch.Tensor:
    """Small integer values, so every reduction order gives the same exact answer."""
    g = torch.Generator().manual_seed(100 + rank)
    v = torch.randint(-3, 4, (2, 5), generator=g)
    v[v == 0] = 2  # no zeros: prod stays informative
    return v.to(dtype)


def oracle(op: str, tensors: list[torch.Tensor]) -> torch.Tensor:
    stack = torch.stack(tensors)
    if op == "sum":
        return stack.sum(0).to(stack.dtype)
    if op == "avg":
        s = stack.sum(0).to(stack.dtype)
        return s / len(tensors) if s.is_floating_point() else torch.div(s, len(tensors), rounding_mode="floor")
    if op == "max":
        return stack.amax(0)
    if op == "min":
        return stack.amin(0)
    return stack.prod(0).to(stack.dtype)


DTYPES = [torch.float32, torch.float64, torch.int64]


def _all_reduce_every_op(comm):
    out = {}
    for dtype in DTYPES:
        for op in REDUCE_OPS:
            t = rank_tensor(comm.rank, dtype)
            ret = comm.all_reduce(t, op=op)
            assert ret is t  # in place
            out[str(dtype), op] = t
    return out


@pytest.mark.parametrize("runtime,world", WORLDS)
def test_all_reduce_matches_oracle(runtime, world):
    results = launch(_all_reduce_every_op, world, runtime=runtime)
    for dtype in DTYPES:
        inputs = [rank_tensor(r, dtype) for r in range(world)]
        for op in REDUCE_OPS:
            want = oracle(op, inputs)
            for r in range(world):
                got = results[r][str(dtype), op]
                assert _same(got, want), (runtime, world, dtype, op, r, got, want)


def test_avg_of_floats_is_sum_over_world_size():
    # the oracle above uses exact small integers; here a non-integer mean
    results = launch(lambda c: c.all_reduce(torch.tensor([1.0, 2.0]) * (c.rank + 1), op="avg"), 3)
    for t in results:
        assert torch.allclose(t, torch.tensor([2.0, 4.0]))


def _gather_broadcast(comm, root):
    gathered = comm.all_gather(rank_tensor(comm.rank))
    b = rank_tensor(comm.rank, torch.float64)
    ret = comm.broadcast(b, src=root)
    assert ret is b
    return gathered, b


@pytest.mark.parametrize("runtime,world", WORLDS)
def test_all_gather_and_broadcast_from_nonzero_root(runtime, world):
    root = world - 1
    results = launch(_gather_broadcast, world, runtime=runtime, args=(root,))
    want = [rank_tensor(r) for r in range(world)]
    for gathered, b in results:
        assert len(gathered) == world
        assert all(_same(g, w) for g, w in zip(gathered, want))
        assert _same(b, rank_tensor(root, torch.float64))


def _barrier(comm, folder):
    open(os.path.join(folder, f"rank{comm.rank}"), "w").close()
    comm.barrier()
    return sorted(os.listdir(folder))


@pytest.mark.parametrize("runtime,world", WORLDS)
def test_barrier_waits_for_every_rank(runtime, world, tmp_path):
    results = launch(_barrier, world, runtime=runtime, args=(str(tmp_path),))
    assert results == [[f"rank{r}" for r in range(world)]] * world


def _collective_stats(comm, numel):
    stats = {}
    for name, call in [("all_reduce", lambda t: comm.all_reduce(t)),
                       ("all_gather", lambda t: comm.all_gather(t)),
                       ("broadcast", lambda t: comm.broadcast(t, src=0)),
                       ("barrier", lambda t: comm.barrier())]:
        before = comm.stats.snapshot()
        call(torch.ones(numel))
        stats[name] = comm.stats - before
    return stats


@pytest.mark.parametrize("runtime,world", WORLDS)
def test_collective_stats_are_ring_equivalent(runtime, world):
    numel = 1000
    n = 4 * numel
    results = launch(_collective_stats, world, runtime=runtime, args=(numel,))
    for r, stats in enumerate(results):
        ar = stats["all_reduce"]
        ring = round(2 * (world - 1) / world * n)
        assert (ar.bytes_sent, ar.bytes_recv) == (ring, ring)
        assert (ar.msgs_sent, ar.msgs_recv) == (2 * (world - 1), 2 * (world - 1))
        ag = stats["all_gather"]
        assert (ag.bytes_sent, ag.bytes_recv, ag.msgs_sent, ag.msgs_recv) == ((world - 1) * n, (world - 1) * n,
                                                                              world - 1, world - 1)
        bc = stats["broadcast"]
        kids = len(binomial_children(r, world))
        got = 0 if r == 0 else 1
        assert (bc.bytes_sent, bc.bytes_recv, bc.msgs_sent, bc.msgs_recv) == (kids * n, got * n, kids, got)
        ba = stats["barrier"]
        assert (ba.bytes_sent, ba.bytes_recv, ba.msgs_sent, ba.msgs_recv) == (0, 0, 0, 0)
    # a broadcast tree delivers one copy to each non-root rank
    assert sum(s["broadcast"].msgs_sent for s in results) == world - 1


def test_stats_reset_snapshot_and_difference():
    def fn(comm):
        if comm.rank == 0:
            comm.send(torch.ones(3), 1)
        else:
            comm.recv(0)
        snap = comm.stats.snapshot()
        comm.stats.reset()
        return snap, comm.stats.snapshot()

    (s0, z0), (s1, z1) = launch(fn, 2)
    assert (s0.bytes_sent, s0.msgs_sent, s1.bytes_recv, s1.msgs_recv) == (12, 1, 12, 1)
    assert z0.bytes_sent == z0.msgs_sent == z1.bytes_recv == z1.msgs_recv == 0


# ----- bad arguments -----------------------------------------------------------------------
def _bad_arguments(comm):
    p = comm.world_size
    t = torch.ones(2)
    with pytest.raises(ValueError, match="valid ops: sum, avg, max, min, prod"):
        comm.all_reduce(t, op="mean")
    for bad in (p, -1, comm.rank, 1.0, "1"):
        with pytest.raises(ValueError, match="rank"):
            comm.send(t, bad)
        with pytest.raises(ValueError, match="rank"):
            comm.isend(t, bad)
        with pytest.raises(ValueError, match="rank"):
            comm.recv(bad)
        with pytest.raises(ValueError, match="rank"):
            comm.irecv(bad)
    with pytest.raises(ValueError, match="valid ranks: 0..%d" % (p - 1)):
        comm.send(t, p)
    with pytest.raises(ValueError, match="itself"):
        comm.send(t, comm.rank)
    with pytest.raises(ValueError, match="valid ranks"):
        comm.broadcast(t, src=p)
    for bad in ([1.0, 2.0], 3.0, None, t.numpy()):
        with pytest.raises(TypeError, match="torch.Tensor"):
            comm.send(bad, (comm.rank + 1) % p)
    assert comm.stats.msgs_sent == 0 and comm.stats.bytes_sent == 0  # nothing was counted
    comm.barrier()  # the comm is still usable
    return True


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_bad_arguments_raise_clear_errors(runtime):
    assert launch(_bad_arguments, 3, runtime=runtime) == [True] * 3


def test_bad_arguments_outside_launch():
    comm = ThreadComm(World(2, timeout=1.0), rank=0)
    with pytest.raises(ValueError, match="unknown reduce op 'mean'; valid ops: sum, avg, max, min, prod"):
        comm.all_reduce(torch.ones(1), op="mean")
    with pytest.raises(ValueError, match=r"dst=2 is not a rank; valid ranks: 0\.\.1"):
        comm.send(torch.ones(1), 2)
    with pytest.raises(ValueError, match="itself"):
        comm.send(torch.ones(1), 0)
    with pytest.raises(TypeError, match="got list"):
        comm.send([1.0], 1)


def _mismatched_sizes(comm):
    comm.all_reduce(torch.ones(comm.rank + 2))


def _mismatched_shapes(comm):
    comm.all_reduce(torch.ones((2, 3) if comm.rank == 0 else (3, 2)))


def _mismatched_dtypes(comm):
    comm.all_reduce(torch.ones(4, dtype=torch.float32 if comm.rank == 0 else torch.float64))


def _mismatched_broadcast(comm):
    comm.broadcast(torch.ones(comm.rank + 2), src=0)


def _mismatched_gather(comm):
    comm.all_gather(torch.ones(comm.rank + 2))


def _mismatched_unrecorded(comm):
    comm.unrecorded_all_reduce(torch.ones(comm.rank + 2))


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("net", [None, "10GbE"])  # on Gloo the check rides on the clocks' all-reduce when there is one
@pytest.mark.parametrize("fn,what", [(_mismatched_sizes, "all_reduce"), (_mismatched_shapes, "all_reduce"),
                                     (_mismatched_dtypes, "all_reduce"), (_mismatched_broadcast, "broadcast"),
                                     (_mismatched_gather, "all_gather"), (_mismatched_unrecorded, "all_reduce")])
def test_collective_mismatch_across_ranks_is_an_error(runtime, net, fn, what):
    with pytest.raises(RankError, match=f"{what} needs the same shape and dtype on every rank"):
        launch(fn, 3, runtime=runtime, timeout=10, net=net)


# ----- receiving into a preallocated buffer (out=) ------------------------------------------
def _recv_into(comm):
    """Rank 0 sends every payload kind; rank 1 receives each into a buffer of its shape (a
    transposed buffer too: the data lands in memory order), with irecv posted ahead."""
    kinds = payloads(3)
    if comm.rank == 0:
        works = [comm.isend(t, 1, tag=4) for t in kinds.values()]
        for w in works:
            w.wait()
        return comm.stats.bytes_sent
    bufs = {k: torch.full_like(t, 7) for k, t in kinds.items()}
    posted = [(k, comm.irecv(0, tag=4, out=bufs[k])) for k in kinds]
    same = {k: w.wait() is bufs[k] for k, w in posted}
    return same, bufs, comm.stats.bytes_recv


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_irecv_into_a_preallocated_buffer(runtime):
    sent, (same, bufs, received) = launch(_recv_into, 2, runtime=runtime)
    assert all(same.values())  # wait() returns the buffer itself
    for k, t in payloads(3).items():
        assert bufs[k].dtype == t.dtype and torch.equal(bufs[k].reshape(-1), t.reshape(-1)), k
    assert sent == received


def _recv_into_mixed(comm):
    """A receive without out= posted before receives into buffers, same source and tag, and
    payloads of equal and different sizes: each message lands where it belongs."""
    sizes = [3, 3, 5, 3, 0, 5]
    if comm.rank == 0:
        works = [comm.isend(torch.full((n,), float(k)), 1, tag=1) for k, n in enumerate(sizes)]
        for w in works:
            w.wait()
        return None
    first = comm.irecv(0, tag=1)  # its payload is posted only when the header is read
    rest = [comm.irecv(0, tag=1, out=torch.empty(n)) for n in sizes[1:]]
    return [first.wait().tolist()] + [w.wait().tolist() for w in rest]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_receives_with_and_without_out_keep_their_order(runtime):
    got = launch(_recv_into_mixed, 2, runtime=runtime)[1]
    assert got == [[float(k)] * n for k, n in enumerate([3, 3, 5, 3, 0, 5])]


def _recv_into_wrong(comm, n_send, dtype):
    if comm.rank == 0:
        sent = comm.isend(torch.ones(n_send, dtype=dtype), 1, tag=2)  # keep the handle: dropping it cancels
        time.sleep(1.0)  # until rank 1's error tears the run down (a wait would fail too, racing it)
        assert sent is not None
    else:
        comm.recv(0, tag=2, out=torch.empty(4))


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("n_send,dtype", [(6, torch.float32), (3, torch.float32), (4, torch.float64)])
def test_recv_into_a_buffer_of_another_size_names_both_ranks(runtime, n_send, dtype):
    """Bigger, smaller or another dtype: a ValueError from the receiver, never Gloo's abort."""
    with pytest.raises(RankError, match=rf"rank 1 receives into 4 torch.float32 elements from rank 0 \(tag 2\), "
                                        rf"but rank 0 sent {n_send} {dtype}") as info:
        launch(_recv_into_wrong, 2, runtime=runtime, args=(n_send, dtype), timeout=10)
    assert info.value.rank == 1


def test_recv_out_must_be_a_tensor():
    comm = ThreadComm(World(2, timeout=1.0), rank=0)
    with pytest.raises(TypeError, match="out must be a torch.Tensor, got list"):
        comm.irecv(1, out=[0.0])
