"""commlab.classroom.sandbox: a student's function runs in child processes; what it gets that is not
plain data are handles to the grader's objects; nothing it sends is unpickled freely; nothing it
starts outlives the sandbox."""
import io
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import pickle
import sys
import threading
import time

import psutil
import pytest
import torch

from commlab import launch
from commlab.classroom.sandbox import Sandbox, SandboxTimeout, StudentError


@pytest.fixture(scope="module", autouse=True)
def forkserver_started():
    """The forkserver (torch preloaded) is started once, so that the deadlines below time the calls."""
    with Sandbox("def f():\n    return 1\n", "f", 60) as box:
        assert box.function() == 1


def descendants() -> set[int]:
    """This process's descendants, but multiprocessing's forkserver and resource tracker."""
    servers = {getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None),
               getattr(multiprocessing.resource_tracker._resource_tracker, "_pid", None)}
    return {p.pid for p in psutil.Process().children(recursive=True) if p.pid not in servers}


def gone(pid: int, wait: float = 3.0) -> bool:
    end = time.monotonic() + wait
    while time.monotonic() < end:
        if not psutil.pid_exists(pid):
            return True
        time.sleep(0.05)
    return False


def test_plain_values_go_and_come_back_by_value():
    source = ("import numpy as np\nimport torch\n\ndef f(x, n, extra=None):\n    x.add_(1)\n"
              "    return x * n, {'n': n, 'extra': extra}, __name__, torch.get_num_threads(), np.float32(0.5), np.arange(2)\n")
    x = torch.ones(3)
    with Sandbox(source, "f", 30) as box:
        y, info, module, threads, half, numbers = box.function(x, 2, extra=[1, 2.5, None, "a", (True,)])
    assert torch.equal(y, torch.full((3,), 4.0))
    assert torch.equal(x, torch.ones(3))  # the child changed its copy
    assert info == {"n": 2, "extra": [1, 2.5, None, "a", (True,)]} and module == "__main__" and threads == 1
    assert half == 0.5 and type(half) is float and torch.equal(numbers, torch.arange(2))  # numpy as plain data


def test_student_exceptions_come_back_by_type_and_message():
    source = ("import os\n\ndef f(k):\n    if k == 0:\n        raise ValueError('bad value')\n"
              "    if k == 3:\n        os._exit(3)\n    assert k == 1, 'not one'\n    return k\n")
    with Sandbox(source, "f", 30) as box:
        with pytest.raises(StudentError, match="^ValueError: bad value$"):
            box.function(0)
        with pytest.raises(AssertionError, match="^not one$"):
            box.function(2)
        assert box.function(1) == 1  # the child is still there
        with pytest.raises(StudentError, match="process exited"):
            box.function(3)
        assert box.function(1) == 1  # and a new one after that
    with Sandbox("def f(:\n", "f", 30) as box, pytest.raises(StudentError, match="^SyntaxError"):
        box.function()
    with Sandbox("def g():\n    pass\n", "f", 30) as box, pytest.raises(StudentError, match="^NameError"):
        box.function()


class Rank:
    rank = 3
    _secret = 42

    def double(self, t):
        return 2 * t

    def fill(self, t, value):
        t.fill_(value)

    def forbidden(self):
        raise AssertionError("use double, not forbidden")


def test_a_handle_reads_attributes_and_calls_methods_in_the_grader():
    source = """
import torch

def f(obj, fn):
    refused = []
    try:
        obj._secret
    except AttributeError as error:
        refused.append(str(error))
    t = torch.zeros(2)
    obj.fill(t, 7.0)  # in place in the grader, and so here
    return obj.rank, obj.double(torch.ones(2)), fn(5), refused, t, [obj]
"""
    rank_object = Rank()
    with Sandbox(source, "f", 30) as box:
        rank, doubled, called, refused, filled, back = box.function(rank_object, lambda v: v * 10)
        with pytest.raises(TypeError, match="module is not handed"):
            box.function(sys, None)
    assert rank == 3 and torch.equal(doubled, torch.full((2,), 2.0)) and called == 50
    assert refused and "_secret" in refused[0]
    assert torch.equal(filled, torch.full((2,), 7.0))
    assert back[0] is rank_object  # a handle sent back is the grader's object again


def test_the_grader_refuses_private_names_and_its_exceptions_reach_the_student():
    source = """
from commlab.classroom import proxies

def f(obj):
    hid = object.__getattribute__(obj, "_hid")  # past Remote, straight to the grader
    try:
        proxies._ask(("get", hid, "_secret"))
    except AttributeError as error:
        return str(error)

def g(obj):
    obj.forbidden()
"""
    with Sandbox(source, "f", 30) as box:
        assert "not readable" in box.function(Rank())
    with Sandbox(source, "g", 30) as box, pytest.raises(AssertionError, match="^use double, not forbidden$"):
        box.function(Rank())


def test_concurrent_calls_run_in_children_of_their_own():
    source = "import os\n\ndef f(barrier, i):\n    barrier.wait()\n    return i, os.getpid()\n"
    barrier, results = threading.Barrier(3, timeout=20), {}
    with Sandbox(source, "f", 60) as box:
        threads = [threading.Thread(target=lambda i=i: results.update([box.function(barrier, i)])) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(results) == [0, 1, 2] and len(set(results.values())) == 3
        barrier = threading.Barrier(1)
        assert box.function(barrier, 9)[1] in results.values()  # an idle child is reused


def test_ranks_on_a_real_comm_with_in_place_collectives():
    source = """
import torch

def allreduce(comm, x):
    right, left = (comm.rank + 1) % comm.world_size, (comm.rank - 1) % comm.world_size
    work = comm.isend(x, right)
    got = comm.recv(left)
    work.wait()
    y = x.clone()
    comm.all_reduce(y)  # in place
    return got, y
"""
    xs = [torch.full((4,), float(r)) for r in range(3)]
    with Sandbox(source, "allreduce", 60) as box:
        results = launch(lambda comm: box.function(comm, xs[comm.rank]), world_size=3, timeout=30)
    for rank, (got, total) in enumerate(results):
        assert torch.equal(got, xs[(rank - 1) % 3]) and torch.equal(total, torch.full((4,), 3.0))


SPY = """
import inspect
import sys

def f():
    found, frame = [], sys._getframe(1)
    while frame is not None:
        found += [frame.f_code.co_name] if "expected" in frame.f_locals else []
        frame = frame.f_back
    return found + [info.function for info in inspect.stack() if "expected" in info.frame.f_locals]
"""


def test_the_student_cannot_reach_the_check_frames():
    def check(call):
        expected = 42  # what a student's function should not read
        assert sys._getframe().f_locals["expected"] == 42
        return call()

    namespace = {}
    exec(SPY, namespace)
    assert "check" in check(namespace["f"])  # in the grader's process, it could
    with Sandbox(SPY, "f", 30) as box:
        assert check(box.function) == []


def test_the_deadline_stops_a_loop_and_leaves_no_process():
    before = descendants()
    start = time.monotonic()
    box = Sandbox("def f():\n    while True:\n        pass\n", "f", 2)
    with pytest.raises(SandboxTimeout, match="stopped after 2 s"):
        box.function()
    assert time.monotonic() - start < 4 and box.timed_out
    assert descendants() <= before
    with pytest.raises(SandboxTimeout):  # at once, from now on
        box.function()
    box.close()
    box.close()


@pytest.mark.parametrize("how", ["child", "orphan"])
def test_no_process_outlives_close(how):
    source = """
import subprocess

def f(how):
    if how == "child":
        return subprocess.Popen(["sleep", "60"], start_new_session=True).pid
    out = subprocess.run(["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True)
    return int(out.stdout)  # sh has exited: sleep is an orphan
"""
    with Sandbox(source, "f", 30) as box:
        pid = box.function(how)
        assert psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    assert gone(pid)


EVIL = """
import io, os, pickle, torch
from commlab.classroom import proxies

class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + MARKER,))

def returned():
    return Evil()

def sent(how):
    payload = pickle.dumps(("return", Evil(), [])) if how == "pickle" else proxies._dump(("return", Evil(), []))
    proxies._CHILD["conn"].send_bytes(payload)  # past the converter, straight to the grader
    return 1
"""


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_a_malicious_value_does_not_run_in_the_grader(tmp_path):
    marker = tmp_path / "marker"
    source = f"MARKER = {str(marker)!r}\n{EVIL}"
    with Sandbox(source, "returned", 30) as box:
        with pytest.raises(StudentError, match="returned a value that is not plain data: Evil"):
            box.function()
    for how in ("pickle", "torch.save"):
        with Sandbox(source, "sent", 30) as box:
            with pytest.raises(StudentError, match="not plain data"):
                box.function(how)
    assert not marker.exists()


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_the_decoder_refuses_a_crafted_pickle(tmp_path):
    marker = tmp_path / "marker"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    buffer = io.BytesIO()
    torch.save({"x": Evil()}, buffer)
    for payload in (pickle.dumps(Evil()), buffer.getvalue()):
        with pytest.raises(pickle.UnpicklingError):
            torch.load(io.BytesIO(payload), weights_only=True)
    assert not marker.exists()


def test_a_generator_goes_by_value_and_its_state_comes_back():
    source = "import torch\n\ndef f(g):\n    return torch.rand(3, generator=g)\n"
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    with Sandbox(source, "f", 30) as box:
        a, b = box.function(g1), box.function(g2)
        assert torch.equal(a, b) and torch.equal(a, torch.rand(3, generator=torch.Generator().manual_seed(5)))
        assert torch.equal(box.function(g1), torch.rand(3, generator=g2))  # both advanced alike


def test_many_small_calls():
    with Sandbox("def f(i, t):\n    return i + 1, t + 1\n", "f", 60) as box:
        t = torch.zeros(2)
        assert sum(box.function(i, t)[0] for i in range(2000)) == sum(range(1, 2001))
