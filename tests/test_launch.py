"""launch(): results, arguments, validation, and failing ranks that must never hang the run."""
import multiprocessing
import os
import re
import threading
import time

import pytest
import torch

from commlab.runtime import RUNTIMES, RankError, launch

RUNTIMES_CPU = ["threads", "gloo"]


def _whoami(comm, a, b=None):
    return comm.rank, comm.world_size, a, b


@pytest.mark.parametrize("runtime", RUNTIMES_CPU)
@pytest.mark.parametrize("world", [1, 3])
def test_results_by_rank_and_args(runtime, world):
    results = launch(_whoami, world, runtime=runtime, args=("x", {"k": [1, 2]}))
    assert results == [(r, world, "x", {"k": [1, 2]}) for r in range(world)]


def _collectives_of_one(comm):
    t = torch.arange(4.0)
    comm.all_reduce(t, op="avg")
    comm.broadcast(t, src=0)
    comm.barrier()
    return t, comm.all_gather(t)


def _int16_rank(comm):
    return torch.full((2, 2), comm.rank, dtype=torch.int16)


@pytest.mark.parametrize("runtime", RUNTIMES_CPU)
def test_world_size_one_collectives_are_identity(runtime):
    t, gathered = launch(_collectives_of_one, 1, runtime=runtime)[0]
    assert torch.equal(t, torch.arange(4.0))
    assert len(gathered) == 1 and torch.equal(gathered[0], t)


def test_default_world_size_is_one():
    assert launch(lambda comm: comm.world_size) == [1]


def test_tensors_come_back_from_processes():
    results = launch(_int16_rank, 2, runtime="gloo")
    assert [t.dtype for t in results] == [torch.int16] * 2
    assert [t.sum().item() for t in results] == [0, 4]


# ----- validation ----------------------------------------------------------------------------
@pytest.mark.parametrize("world", [0, -1, "2", 1.5])
def test_bad_world_size(world):
    with pytest.raises(ValueError, match="world_size must be an integer >= 1"):
        launch(_whoami, world, args=(0,))


def test_unknown_runtime_lists_the_valid_ones():
    assert RUNTIMES == ("threads", "gloo", "nccl")
    with pytest.raises(ValueError, match="unknown runtime 'mpi'; valid runtimes: threads, gloo, nccl"):
        launch(_whoami, 2, runtime="mpi", args=(0,))


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA GPUs")
def test_nccl_without_gpus_is_a_clear_error():
    with pytest.raises(RuntimeError, match="needs CUDA GPUs") as info:
        launch(_whoami, 2, runtime="nccl", args=(0,))
    assert "valid runtimes here: 'threads', 'gloo'" in str(info.value)


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_timeout_must_be_positive(timeout):
    with pytest.raises(ValueError, match="timeout must be > 0"):
        launch(_whoami, 2, timeout=timeout, args=(0,))


def test_fn_must_be_callable():
    with pytest.raises(TypeError, match="fn must be callable"):
        launch("not a function", 2)


# ----- failures ----------------------------------------------------------------------------
def _no_leftovers():
    assert not [t.name for t in threading.enumerate() if t.name.startswith("commlab-rank")]
    assert not multiprocessing.active_children()


def _boom_on_two(comm):
    comm.barrier()
    if comm.rank == 2:
        raise ValueError("rank two exploded on purpose")
    comm.all_reduce(torch.ones(3))  # the others wait for rank 2 in a collective
    return comm.rank


def _boom_while_others_recv(comm):
    if comm.rank == 2:
        raise KeyError("rank two exploded on purpose")
    return comm.recv(2).tolist()


@pytest.mark.parametrize("runtime", RUNTIMES_CPU)
@pytest.mark.parametrize("fn", [_boom_on_two, _boom_while_others_recv])
def test_exception_on_one_rank_raises_rank_error_quickly(runtime, fn):
    start = time.monotonic()
    with pytest.raises(RankError) as info:
        launch(fn, 4, runtime=runtime, timeout=60)
    assert time.monotonic() - start < 10
    err = info.value
    assert err.rank == 2
    assert "rank two exploded on purpose" in err.traceback_text
    assert "Traceback" in err.traceback_text and fn.__name__ in err.traceback_text
    assert str(err).startswith("rank 2 failed: ")
    _no_leftovers()


def _silent_rank(comm, linger):
    if comm.rank == 0:
        time.sleep(linger)  # alive (gloo: its connections stay open) but never sends
        return "silent"
    return comm.recv(0).tolist()


@pytest.mark.parametrize("runtime,linger", [("threads", 0.0), ("gloo", 0.0), ("gloo", 3.0)],
                         ids=["threads", "gloo-exits", "gloo-lingers"])
def test_rank_that_never_sends_names_waiter_and_peer(runtime, linger):
    timeout = 2
    start = time.monotonic()
    with pytest.raises(RankError) as info:
        launch(_silent_rank, 3, runtime=runtime, timeout=timeout, args=(linger,))
    assert time.monotonic() - start < timeout + 4
    err = info.value
    assert err.rank in (1, 2)
    assert re.search(rf"rank {err.rank} (waited 2 s for|failed waiting for) a message from rank 0 \(tag 0\)",
                     str(err)), str(err)
    if runtime == "threads" or linger:  # the peer is alive but silent: the wait times out
        assert str(err).startswith(f"rank {err.rank} failed: CommTimeout: "), str(err)
    _no_leftovers()


def _module_level(comm, k):
    return comm.all_reduce(torch.tensor([float(comm.rank * k)])).item()


def test_gloo_runs_a_function_from_the_test_module():
    assert launch(_module_level, 3, runtime="gloo", args=(2,)) == [6.0] * 3


def test_spawn_with_a_lambda_says_to_move_it_to_a_module():
    with pytest.raises(RuntimeError, match="importable module") as info:
        launch(lambda comm: comm.rank, 2, runtime="gloo", start_method="spawn")
    assert "cannot be sent to spawned processes" in str(info.value)
    _no_leftovers()


def _dies_hard(comm, others_wait):
    if comm.rank == 1:
        os._exit(3)
    if others_wait:
        comm.barrier()  # the others notice the lost peer and fail too: launch must blame rank 1
    return comm.rank


@pytest.mark.parametrize("others_wait", [False, True], ids=["others-finish", "others-wait"])
def test_rank_process_that_dies_hard_is_named(others_wait):
    start = time.monotonic()
    with pytest.raises(RankError, match="exited with code 3") as info:
        launch(_dies_hard, 3, runtime="gloo", timeout=30, args=(others_wait,))
    assert time.monotonic() - start < 10
    assert info.value.rank == 1
    _no_leftovers()


TORCHRUN_SCRIPT = """
import os, sys
import torch, commlab

def fn(comm, scale):
    x = torch.tensor([float(comm.rank + 1)])
    comm.all_reduce(x)
    if comm.rank == 0:
        comm.send(torch.arange(3.0), 1)
    elif comm.rank == 1:
        assert comm.recv(0).tolist() == [0.0, 1.0, 2.0]
    return x.item() * scale, comm.rank, comm.world_size

results = commlab.launch(fn, runtime="gloo", args=(10,), net="10GbE")
with open(sys.argv[1] + "/rank" + os.environ["RANK"] + ".txt", "w") as f:  # stdout would interleave
    f.write(repr(results))
"""


def test_under_torchrun_each_process_is_one_rank_and_gets_all_results(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "job.py"
    script.write_text(TORCHRUN_SCRIPT)
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                          str(script), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    for rank in (0, 1):
        assert (tmp_path / f"rank{rank}.txt").read_text() == "[(30.0, 0, 2), (30.0, 1, 2)]"


# ----- how rank processes start ------------------------------------------------------------
FORKED_MARK = {"set in the parent": False}  # a forked child inherits the parent's True; a fresh one imports False


def _was_i_forked(comm):
    return FORKED_MARK["set in the parent"]


@pytest.fixture
def gpu_machine(monkeypatch):
    """This process believes it has a GPU, as on a GPU server (where autograd's device threads
    make a forked child unable to run a backward pass)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    if hasattr(torch, "accelerator"):
        monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.delenv("COMMLAB_START_METHOD", raising=False)


def test_on_a_gpu_machine_gloo_ranks_are_not_forked(gpu_machine, monkeypatch):
    from commlab.runtime import fork_is_safe, resolve_start_method

    assert not fork_is_safe()
    assert resolve_start_method("gloo") == "forkserver"
    monkeypatch.setitem(FORKED_MARK, "set in the parent", True)
    assert launch(_was_i_forked, 2, runtime="gloo") == [False, False]
    _no_leftovers()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: its ranks are never forked")
def test_on_a_cpu_machine_gloo_ranks_are_forked(monkeypatch):
    monkeypatch.delenv("COMMLAB_START_METHOD", raising=False)
    monkeypatch.setitem(FORKED_MARK, "set in the parent", True)
    assert launch(_was_i_forked, 2, runtime="gloo") == [True, True]


def test_forked_and_fresh_ranks_compute_the_same_bits():
    runs = {m: launch(_module_level, 2, runtime="gloo", args=(3,), start_method=m) for m in ("forkserver", "spawn")}
    assert runs["forkserver"] == runs["spawn"] == launch(_module_level, 2, runtime="threads", args=(3,))


def test_on_a_gpu_machine_a_notebook_function_gets_the_clear_message(gpu_machine):
    with pytest.raises(RuntimeError, match="importable module") as info:
        launch(lambda comm: comm.rank, 2, runtime="gloo")
    assert "has a GPU" in str(info.value) and "'forkserver'" in str(info.value)
    _no_leftovers()


def test_fork_is_refused_where_it_is_unsafe(gpu_machine, monkeypatch):
    with pytest.raises(ValueError, match="start_method='fork' is unsafe here: this machine has a GPU"):
        launch(_module_level, 2, runtime="gloo", args=(1,), start_method="fork")
    monkeypatch.setenv("COMMLAB_START_METHOD", "fork")
    with pytest.raises(ValueError, match="COMMLAB_START_METHOD='fork' is unsafe here"):
        launch(_module_level, 2, runtime="gloo", args=(1,))


def test_bad_start_method_names_the_valid_ones(monkeypatch):
    with pytest.raises(ValueError, match="unknown start_method 'thread'; valid: fork, forkserver, spawn"):
        launch(_module_level, 2, runtime="gloo", args=(1,), start_method="thread")
    monkeypatch.setenv("COMMLAB_START_METHOD", "posix_spawn")
    with pytest.raises(ValueError, match="unknown COMMLAB_START_METHOD 'posix_spawn'; valid: fork, forkserver"):
        launch(_module_level, 2, runtime="gloo", args=(1,))
    _no_leftovers()


def test_the_environment_chooses_the_default_start_method(monkeypatch):
    from commlab.runtime import resolve_start_method

    monkeypatch.setenv("COMMLAB_START_METHOD", "spawn")
    assert resolve_start_method("gloo") == "spawn"
    assert resolve_start_method("gloo", "forkserver") == "forkserver"  # the argument wins
    monkeypatch.setitem(FORKED_MARK, "set in the parent", True)
    assert launch(_was_i_forked, 2, runtime="gloo") == [False, False]


def test_a_script_read_from_stdin_gets_a_clear_message_instead_of_dead_ranks():
    import subprocess
    import sys

    script = ("from commlab import launch\nfrom commlab.chapters.ch00 import collectives\n"
              "launch(collectives, 2, runtime='gloo', start_method='forkserver')\n")
    out = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "main script '<stdin>' is not a file" in out.stderr and "Save it as a .py file" in out.stderr
