"""The shared pieces of the all-reduce algorithms: balanced cuts, combining, checking."""
import pytest
import torch

from commlab.arch.chunks import absorb, bounds, combine_, members, split
from commlab.runtime.threads import ThreadComm, World


@pytest.mark.parametrize("n,parts", [(0, 3), (2, 5), (10, 3), (12, 4), (7, 1)])
def test_bounds_are_balanced_and_cover_everything(n, parts):
    b = bounds(n, parts)
    sizes = [e - s for s, e in b]
    assert len(b) == parts and b[0][0] == 0 and b[-1][1] == n and sum(sizes) == n
    assert sizes == sorted(sizes, reverse=True) and max(sizes) - min(sizes) <= 1


def test_split_gives_views():
    x = torch.arange(10.0)
    pieces = split(x, 3)
    pieces[1].fill_(-1)
    assert [p.numel() for p in pieces] == [4, 3, 3] and x[4:7].tolist() == [-1.0] * 3


@pytest.mark.parametrize("op,want", [("sum", [4.0, 1.0]), ("prod", [3.0, -2.0]), ("max", [3.0, 2.0]),
                                     ("min", [1.0, -1.0])])
def test_combine(op, want):
    acc = torch.tensor([1.0, -1.0])
    assert combine_(acc, torch.tensor([3.0, 2.0]), op) is acc and acc.tolist() == want


def test_absorb_checks_what_arrived():
    comm = ThreadComm(World(3, timeout=1.0), rank=2)
    mine = torch.ones(4)
    assert absorb(comm, torch.full((4,), 2.0), 1, mine, "sum") is mine and mine.tolist() == [3.0] * 4
    assert absorb(comm, torch.zeros(2, 2), 1, mine).tolist() == [0.0] * 4  # a copy, shape aside
    with pytest.raises(ValueError, match=r"rank 2 got 5 torch.float32 elements from rank 1 where its own tensor "
                                         r"has 4 torch.float32"):
        absorb(comm, torch.ones(5), 1, mine, "sum")
    with pytest.raises(ValueError, match="torch.float64"):
        absorb(comm, torch.ones(4, dtype=torch.float64), 0, mine)
    with pytest.raises(ValueError, match="unknown reduce op 'avg'"):
        combine_(mine, mine, "avg")


def test_members():
    comm = ThreadComm(World(5, timeout=1.0), rank=3)
    assert members(comm) == ([0, 1, 2, 3, 4], 3)
    assert members(comm, [4, 3]) == ([4, 3], 1)
    with pytest.raises(ValueError, match=r"rank 3 is not in the group \[0, 1\]"):
        members(comm, [0, 1])


def test_workspace_is_kept_per_rank_and_name():
    from commlab.arch.chunks import workspace

    a, b = ThreadComm(World(2, timeout=1.0), rank=0), ThreadComm(World(2, timeout=1.0), rank=1)
    like = torch.zeros(1, dtype=torch.float16)
    w = workspace(a, like, 10, "x")
    assert w.numel() == 10 and w.dtype == torch.float16
    assert workspace(a, like, 6, "x").data_ptr() == w.data_ptr()  # the same memory again
    assert workspace(a, like, 6, "y").data_ptr() != w.data_ptr()
    assert workspace(b, like, 6, "x").data_ptr() != w.data_ptr()
    assert workspace(a, like, 20, "x").numel() == 20 and workspace(a, like, 0, "x").numel() == 0
