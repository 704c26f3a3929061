"""Chapter 02 exercise checks: open, right and wrong answers; they print and never raise."""
import pytest
import torch

from commlab.arch import collectives
from commlab.chapters.exercises import ch02
from commlab.net import cost
from commlab.net.link import get_link
from commlab.runtime import launch
from commlab.arch.ring import cost as ring_cost
from commlab.arch.tree import cost as tree_cost


# ----------------------------------------------------------------------------- exercise 1
def ring_allreduce(comm, x):
    """A reader's ring: reduce-scatter, then all-gather, with isend/recv."""
    n, r = comm.world_size, comm.rank
    right, left = (r + 1) % n, (r - 1) % n
    chunks = list(torch.tensor_split(x, n))
    for k in range(n - 1):  # reduce-scatter: send chunk r-k, add chunk r-k-1
        w = comm.isend(chunks[(r - k) % n], right)
        chunks[(r - k - 1) % n] += comm.recv(left)
        w.wait()
    for k in range(n - 1):  # all-gather: send chunk r+1-k, take chunk r-k
        w = comm.isend(chunks[(r + 1 - k) % n], right)
        chunks[(r - k) % n].copy_(comm.recv(left))
        w.wait()
    return x


def ring_returning_none(comm, x):
    ring_allreduce(comm, x)


def naive_allreduce(comm, x):
    if comm.rank:
        comm.send(x, 0)
        return comm.recv(0)
    for src in range(1, comm.world_size):
        x += comm.recv(src)
    for dst in range(1, comm.world_size):
        comm.send(x, dst)
    return x


def native_allreduce(comm, x):
    return comm.all_reduce(x)


def library_ring(comm, x):
    return collectives.allreduce(comm, x, "ring")


def off_by_one(comm, x):
    return ring_allreduce(comm, x) + 1


def raising(comm, x):
    raise RuntimeError("oops")


def test_open(capsys):
    assert ch02.check_allreduce(None) is False
    assert "not answered yet" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("fn", [ring_allreduce, ring_returning_none])
def test_a_ring_passes(fn, capsys):
    assert ch02.check_allreduce(fn) is True
    assert "correct" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("fn,says", [
    (naive_allreduce, "a ring sends at most"),
    (native_allreduce, "send/recv (or isend/irecv) only"),
    (library_ring, "write the ring yourself"),
    (off_by_one, "got a wrong sum"),
    (raising, "oops"),
])
def test_other_functions_fail_with_a_reason(fn, says, capsys):
    assert ch02.check_allreduce(fn) is False
    assert says in " ".join(capsys.readouterr().out.split())


def test_lengths_cover_the_edge_cases():
    for p in range(1, 8):
        lengths = ch02._lengths(p)
        assert 0 in lengths and any(0 < n < p for n in lengths) or p == 1
        assert any(n % p for n in lengths) or p == 1


# ----------------------------------------------------------------------------- exercises 2 and 3
def test_crossover_is_where_the_closed_forms_meet():
    n = ch02.tree_ring_crossover(64, "10GbE", 4)
    link = get_link("10GbE")
    assert tree_cost(n, 64, link, 4) == pytest.approx(ring_cost(n, 64, link), rel=1e-9)
    assert tree_cost(0.9 * n, 64, link, 4) < ring_cost(0.9 * n, 64, link)
    assert tree_cost(1.1 * n, 64, link, 4) > ring_cost(1.1 * n, 64, link)
    # by hand: tree (4(s-1) + r + d) T(n/s) with r = 11, d = 10 at p = 64; ring 126 alpha + 2(63/64) n beta
    a, b = link.alpha, link.beta
    assert n == pytest.approx((126 - 33) * a / (33 / 4 * b - 2 * 63 / 64 * b), rel=1e-9)


def _ring_bytes_measured():
    def f(comm):
        collectives.allreduce(comm, torch.zeros(25_600_000 // 1000), "ring")
        return comm.stats.bytes_sent
    return launch(f, 32)[0] * 1000  # 1/1000 of ResNet-50: chunks divide evenly, bytes scale exactly


RIGHT = {ch02.check_crossover: lambda: ch02.tree_ring_crossover(64, "10GbE", 4),
         ch02.check_ring_bytes: lambda: 2 * 31 / 32 * 4 * 25.6e6}


@pytest.mark.parametrize("check", list(RIGHT), ids=lambda c: c.__name__)
def test_numeric_checks(check, capsys):
    assert check(None) is False
    assert check(RIGHT[check]()) is True
    assert check(RIGHT[check]() * 1.5) is False
    assert check("not a number") is False
    out = " ".join(capsys.readouterr().out.split())
    assert "not answered yet" in out and "correct" in out and "not yet" in out and "expected a number" in out


def test_ring_bytes_agree_with_the_counters():
    assert ch02.check_ring_bytes(_ring_bytes_measured())
