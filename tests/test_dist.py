"""DistComm specifics: the message header, recv_any, a large payload over Gloo, and the NCCL message
path (headers on a Gloo group of their own, payloads on the default group) run on CPUs."""
import pytest
import torch

from commlab.runtime import RankError, launch
from commlab.runtime.dist import DTYPES, HEADER, MAX_DIMS, DistComm


@pytest.fixture
def comm():
    # building the header needs no process group
    return DistComm(0, 2, "gloo")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("ndim", range(MAX_DIMS + 1))
def test_header_round_trip(comm, dtype, ndim):
    shape = tuple((2, 1, 3)[i % 3] for i in range(ndim))
    tensor = torch.zeros(shape, dtype=dtype)
    depart = 1234.000001 + ndim / 3  # any float64 survives exactly
    h = comm._header(tensor, depart)
    assert h.dtype == torch.float64 and h.shape == (HEADER,)
    assert comm._parse(h) == (dtype, shape, depart)


def test_header_keeps_large_and_empty_dimensions(comm):
    for shape in [(2**40,), (0,), (3, 0, 5), (2**20, 2**21)]:
        meta = torch.empty(shape, device="meta")  # no memory: only the header is built
        assert comm._parse(comm._header(meta, 0.0)) == (torch.float32, shape, 0.0)


def test_header_rejects_more_than_max_dims(comm):
    t = torch.zeros((1,) * (MAX_DIMS + 1))
    with pytest.raises(ValueError, match=f"cannot send a tensor of {MAX_DIMS + 1} dimensions; at most {MAX_DIMS}"):
        comm._header(t, 0.0)


def test_header_rejects_unsupported_dtype(comm):
    with pytest.raises(TypeError, match=r"cannot send dtype torch.complex64; valid: torch.float32, "):
        comm._header(torch.zeros(2, dtype=torch.complex64), 0.0)


def _nine_dims(comm):
    if comm.rank == 0:
        comm.send(torch.zeros((1,) * 9), 1)
    else:
        comm.recv(0)


def test_too_many_dims_fails_the_run_clearly():
    with pytest.raises(RankError, match="at most 8") as info:
        launch(_nine_dims, 2, runtime="gloo", timeout=5)
    assert info.value.rank == 0


def _recv_any(comm):
    if comm.rank == 0:
        got = {}
        for _ in range(comm.world_size - 1):
            src, t = comm.recv_any(tag=2)
            got[src] = t
        return got
    comm.send(torch.arange(comm.rank * 4, dtype=torch.int32).reshape(comm.rank, 4), 0, tag=2)
    return comm.backend


def test_gloo_recv_any():
    results = launch(_recv_any, 4, runtime="gloo")
    assert results[1:] == ["gloo"] * 3
    got = results[0]
    assert sorted(got) == [1, 2, 3]
    for src, t in got.items():
        assert torch.equal(t, torch.arange(src * 4, dtype=torch.int32).reshape(src, 4))


def _large(comm, numel):
    if comm.rank == 0:
        g = torch.Generator().manual_seed(7)
        comm.send(torch.randn(numel, generator=g), 1)
        return comm.stats.bytes_sent
    t = comm.recv(0)
    g = torch.Generator().manual_seed(7)
    return bool(torch.equal(t, torch.randn(numel, generator=g))), comm.stats.bytes_recv


def test_large_tensor_round_trip():
    numel = 4 * 1024 * 1024  # 16 MB of float32
    sent, (same, received) = launch(_large, 2, runtime="gloo", timeout=30, args=(numel,))
    assert same
    assert sent == received == 16 * 1024 * 1024


# Rank functions live at module level: where forking is unsafe (a GPU machine) ranks start from a
# fork server, which can only import what it runs.
def _describe(comm):
    return type(comm).__name__, comm.backend, str(comm.device), comm.rank, comm.world_size


def _send_tag_too_large(comm):
    comm.send(torch.ones(1), 1 - comm.rank, tag=1 << 15)


def test_gloo_comm_reports_its_backend_and_device():
    info = launch(_describe, 2, runtime="gloo")
    assert info == [("DistComm", "gloo", "cpu", r, 2) for r in range(2)]


def test_gloo_tags_must_fit_the_tag_space():
    with pytest.raises(RankError, match=r"tag must be an integer in 0\.\.32767 on gloo, got 32768"):
        launch(_send_tag_too_large, 2, runtime="gloo", timeout=10)


def test_payload_tags_differ_by_size_and_dtype():
    comm = DistComm(0, 2, "gloo")
    tags = {comm._payload_kw(3, n, d)["tag"] for n in (1, 2, 1000) for d in (torch.float32, torch.int64)}
    assert len(tags) == 6
    assert all(t % 2 == 1 and t < 2**31 and t & 0xFFFF == 2 * 3 + 1 for t in tags)


# ----------------------------------------------------------------------------- headers on their own group
# On NCCL the headers go over a Gloo group and the payloads over NCCL, so that recv_any and
# recv_first can read the first header from any rank. The same split runs here on CPUs: a
# DistComm whose headers go over a second Gloo group, its payloads over the default one.
def split(comm):
    from commlab.runtime.dist import header_group

    return DistComm(comm.rank, comm.world_size, "gloo", headers=header_group())


def asp_exchange(comm, pushes=6):
    """An asynchronous server, as ASP runs it: rank 0 takes whichever push comes first
    (recv_first over the workers not waiting for a reply) and answers it; a worker pushes
    ``pushes`` times, each of another size and dtype, waiting for the reply in between. Every
    third message the server takes by name (recv(src)) instead, as round-robin does."""
    workers = range(1, comm.world_size)
    if comm.rank == 0:
        log, left = [], {w: pushes for w in workers}
        while any(left.values()):
            live = sorted(w for w in workers if left[w])
            if len(log) % 3 == 2:
                w = live[len(log) % len(live)]
                msg = comm.recv(w, tag=4)
            else:
                w, msg = comm.recv_first(live, tag=4)
            i = pushes - left[w]
            assert msg.shape == (w, i + 1) and msg.dtype == (torch.float64 if i % 2 else torch.int32), (w, i, msg)
            assert torch.all(msg == 100 * w + i), (w, i, msg)
            log.append((w, i))
            left[w] -= 1
            comm.send(torch.full((i + 2,), float(w)), w, tag=5)
        return log
    got = []
    for i in range(pushes):
        dtype = torch.float64 if i % 2 else torch.int32
        comm.send(torch.full((comm.rank, i + 1), 100 * comm.rank + i, dtype=dtype), 0, tag=4)
        reply = comm.recv(0, tag=5, out=torch.empty(i + 2))
        got.append(bool(torch.all(reply == comm.rank)) and reply.numel() == i + 2)
    return got


def _split_asp(comm):
    return asp_exchange(split(comm))


def _split_recv_any(comm):
    return _recv_any(split(comm))


def _check_asp(results, world, pushes=6):
    log = results[0]
    assert sorted(log) == [(w, i) for w in range(1, world) for i in range(pushes)]  # each once
    for w in range(1, world):  # and in the order each worker sent them
        assert [i for v, i in log if v == w] == list(range(pushes))
    assert all(results[w] == [True] * pushes for w in range(1, world))


def test_headers_on_their_own_group_recv_any():
    results = launch(_split_recv_any, 4, runtime="gloo", timeout=30)
    assert sorted(results[0]) == [1, 2, 3]
    for src, t in results[0].items():
        assert torch.equal(t, torch.arange(src * 4, dtype=torch.int32).reshape(src, 4))


def test_headers_on_their_own_group_asp_exchange():
    _check_asp(launch(_split_asp, 4, runtime="gloo", timeout=30), 4)


def test_asp_exchange_on_gloo():  # the same exchange with headers and payloads on one group
    _check_asp(launch(asp_exchange, 4, runtime="gloo", timeout=30), 4)


def _payload_bytes_only(comm):
    c = split(comm)
    if c.rank == 0:
        c.send(torch.zeros(10), 1)
        c.send(torch.zeros(0), 1)
        return c.stats.snapshot()
    c.recv(0)
    c.recv(0)
    return c.stats.snapshot()


def test_headers_on_their_own_group_count_only_payload_bytes():
    sent, received = launch(_payload_bytes_only, 2, runtime="gloo", timeout=30)
    assert (sent.bytes_sent, sent.msgs_sent, received.bytes_recv, received.msgs_recv) == (40, 2, 40, 2)


def _recv_any_with_a_receive_open(comm):
    c = split(comm)
    if c.rank == 1:
        c.send(torch.ones(3), 0)
        c.send(torch.ones(5), 0)
        return None
    open_ = c.irecv(1)
    try:
        c.recv_any()
    except RuntimeError as e:
        msg = str(e)
    got = open_.wait(), c.recv_any()
    return msg, got[0].numel(), got[1][0], got[1][1].numel()


def test_headers_on_their_own_group_refuse_recv_any_with_a_receive_open():
    msg, first, src, second = launch(_recv_any_with_a_receive_open, 2, runtime="gloo", timeout=30)[0]
    assert msg == ("rank 0 called recv_any with receives from rank(s) [1] still open; on gloo messages between two "
                   "ranks are matched in order: wait for them first")
    assert (first, src, second) == (3, 1, 5)  # nothing was lost or taken out of order
