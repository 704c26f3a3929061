"""How a group of rank processes starts: no rank runs before every rank has made the group, a
failed start is tried again (and said), and nothing is left behind.

The tests replace functions of commlab.runtime.processes in this process; forked ranks inherit
the replacement, so they run where ranks are forked (a machine without a GPU)."""
import multiprocessing
import time

import pytest
import torch.distributed as dist

from commlab.runtime import RankError, fork_is_safe, launch
from commlab.runtime import processes

pytestmark = pytest.mark.skipif(not fork_is_safe(), reason="ranks are not forked here: they would not inherit "
                                                           "the replaced functions")


@pytest.fixture
def tmp_folder(tmp_path, monkeypatch):
    """Temporary folders (the rendezvous's among them) go under tmp_path, to be counted."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("COMMLAB_START_METHOD", raising=False)
    return tmp_path


def _nothing_left(folder):
    assert not list(folder.glob("commlab-rendezvous-*"))
    assert not multiprocessing.active_children()


def _start_time(comm):
    return time.time()


def test_no_rank_runs_before_every_rank_has_made_the_group(tmp_folder, monkeypatch):
    """Rank 2 is slow to make its group. The others' function, which returns at once, must not
    start before rank 2 is done: a rank that ran and left early made a slower peer fail in its
    handshake ("Gloo connectFullMesh failed ... Connection closed by peer") on a busy machine."""
    real = dist.init_process_group
    made = tmp_folder / "rank2-made-its-group"

    def slow_on_two(*a, rank, **kw):
        real(*a, rank=rank, **kw)
        if rank == 2:
            time.sleep(1.0)
            made.write_text(repr(time.time()))

    monkeypatch.setattr(dist, "init_process_group", slow_on_two)
    starts = launch(_start_time, 4, runtime="gloo", timeout=30)
    assert min(starts) >= float(made.read_text())
    _nothing_left(tmp_folder)


def _flaky_connect(marker, fails, error):
    """processes.connect, failing on rank 1 the first ``fails`` times it is called there."""
    real = processes.connect

    def connect(rank, *a, **kw):
        if rank == 1:
            n = len(list(marker.parent.glob(marker.name + "*")))
            if n < fails:
                (marker.parent / f"{marker.name}{n}").touch()
                raise RuntimeError(error)
        return real(rank, *a, **kw)

    return connect


def _rank(comm):
    comm.barrier()
    return comm.rank


def test_a_failed_start_is_tried_again_and_said(tmp_folder, monkeypatch):
    error = "Gloo connectFullMesh failed with [pair.cc:553] Connection closed by peer [127.0.0.1]:1207"
    monkeypatch.setattr(processes, "connect", _flaky_connect(tmp_folder / "failed", 1, error))
    with pytest.warns(RuntimeWarning, match=r"rank 1 failed while its gloo process group was starting "
                                            r"\(RuntimeError: Gloo connectFullMesh failed.*\); starting its "
                                            r"process group again \(attempt 2 of 3\)"):
        assert launch(_rank, 3, runtime="gloo", timeout=30) == [0, 1, 2]
    _nothing_left(tmp_folder)


def test_a_start_that_keeps_failing_says_how_often(tmp_folder, monkeypatch):
    monkeypatch.setattr(processes, "connect", _flaky_connect(tmp_folder / "failed", 99, "Connection refused"))
    with pytest.warns(RuntimeWarning, match="attempt 3 of 3"), pytest.raises(RankError) as info:
        launch(_rank, 3, runtime="gloo", timeout=30)
    assert info.value.rank == 1
    assert str(info.value).startswith("rank 1 failed: the gloo process group did not start (it failed 3 times; "
                                      "the last failure: RuntimeError: Connection refused)")
    assert len(list(tmp_folder.glob("failed*"))) == processes.START_ATTEMPTS == 3
    _nothing_left(tmp_folder)


def test_a_start_that_timed_out_is_not_tried_again(tmp_folder, monkeypatch):
    monkeypatch.setattr(processes, "connect", _flaky_connect(tmp_folder / "failed", 99, "Timed out waiting 30000ms"))
    with pytest.raises(RankError, match=r"did not start \(it timed out; the last failure: RuntimeError: Timed out"):
        launch(_rank, 2, runtime="gloo", timeout=30)
    assert len(list(tmp_folder.glob("failed*"))) == 1
    _nothing_left(tmp_folder)


def _idle(comm):
    return comm.rank


def test_ranks_that_never_communicate_launch_back_to_back(tmp_folder):
    """The shape of the launch that failed on a busy machine, a few times over (the full version,
    under load: benchmarks/stress_launch.py)."""
    for world in (3, 4) * 5:
        assert launch(_idle, world, runtime="gloo") == list(range(world))
    _nothing_left(tmp_folder)
