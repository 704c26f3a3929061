"""commlab.infra.queue_policies: the built-ins are registered, one line each; a toy policy
registered from this file alone (no library file touched) runs through simulate_jobs and gives
the start and finish times worked out by hand; refusals name the bad value and the valid ones."""
import pytest

from commlab.infra import queue_policies
from commlab.infra.jobs import QUEUES, Job, simulate_jobs
from commlab.infra.placement import Datacenter, iteration_time
from commlab.infra.queue_policies import QUEUE_POLICIES, QueuePolicy, QueueState, register_queue_policy

TINY = Datacenter(1, 2, 2)          # 4 GPUs: nodes 0 and 1 in one rack


def lifo(state: QueueState) -> None:
    """Last in, first out: every waiting job that fits starts, newest first; never preempts."""
    for i in sorted(state.waiting, key=lambda i: (-state.jobs[i].arrival, -i)):
        if (where := state.place(i)) is not None:
            state.start(i, where)


@pytest.fixture
def with_lifo():
    policy = register_queue_policy("lifo", lifo)
    try:
        yield policy
    finally:
        del QUEUE_POLICIES["lifo"]


def test_the_builtins_are_registered():
    assert QUEUES == queue_policies.BUILTIN_QUEUES == ("fifo", "sjf", "las")
    assert {n: (p.decide, p.periodic) for n, p in QUEUE_POLICIES.items()} == {
        "fifo": (queue_policies.fifo, False), "sjf": (queue_policies.sjf, False), "las": (queue_policies.las, True)}


def test_a_toy_policy_registered_here_runs_through_the_public_api(with_lifo):
    assert with_lifo == QueuePolicy(lifo, periodic=False) and QUEUE_POLICIES["lifo"] is with_lifo
    # X holds all 4 GPUs; Y (3 GPUs, short) and Z (2 GPUs, long) queue behind it and cannot run
    # together. FIFO and SJF both pick Y when X ends; LIFO picks Z, the newer, and Y waits for Z.
    jobs = [Job(0, 0.0, 4, "resnet50", 100), Job(1, 1.0, 3, "resnet50", 10), Job(2, 2.0, 2, "resnet50", 1000)]
    t_x = iteration_time("resnet50", {0: 2, 1: 2}, TINY)
    t_z = iteration_time("resnet50", {0: 2}, TINY)                # 2 GPUs on an empty cluster: one node
    t_y = iteration_time("resnet50", {0: 2, 1: 1}, TINY)
    r = simulate_jobs(jobs, TINY, "lifo")
    assert r.start == {0: 0.0, 2: pytest.approx(100 * t_x), 1: pytest.approx(100 * t_x + 1000 * t_z)}
    assert r.finish[0] == pytest.approx(100 * t_x)
    assert r.finish[2] == pytest.approx(100 * t_x + 1000 * t_z)
    assert r.finish[1] == pytest.approx(100 * t_x + 1000 * t_z + 10 * t_y)
    assert [(i, e, w) for _, i, e, w in r.timeline] == [
        (0, "start", {0: 2, 1: 2}), (0, "finish", {0: 2, 1: 2}), (2, "start", {0: 2}),
        (2, "finish", {0: 2}), (1, "start", {0: 2, 1: 1}), (1, "finish", {0: 2, 1: 1})]
    for q in ("fifo", "sjf"):                                     # the built-ins decide otherwise
        other = simulate_jobs(jobs, TINY, q)
        assert other.start[1] == pytest.approx(100 * t_x) and other.start[2] > other.start[1]


def test_a_periodic_toy_policy_is_woken_every_quantum():
    # a queue that starts nobody until a quantum boundary has passed since the first arrival:
    # only the periodic wake-up gets the lone job going, at t = quantum
    def at_a_boundary(state):
        if state.t > 0:
            for i in list(state.waiting):
                if (where := state.place(i)) is not None:
                    state.start(i, where)

    register_queue_policy("boundary", at_a_boundary, periodic=True)
    try:
        r = simulate_jobs([Job(0, 0.0, 1, "resnet50", 10)], TINY, "boundary", quantum=25.0)
        assert r.start[0] == 25.0
        assert r.finish[0] == pytest.approx(25.0 + 10 * iteration_time("resnet50", {0: 1}, TINY))
    finally:
        del QUEUE_POLICIES["boundary"]


def test_refusals(with_lifo):
    jobs = [Job(0, 0.0, 1, "resnet50", 10)]
    with pytest.raises(ValueError, match=r"queue='lilo'; valid: fifo, sjf, las, lifo \(add one with "
                                         r"commlab.infra.queue_policies.register_queue_policy\)"):
        simulate_jobs(jobs, TINY, "lilo")
    with pytest.raises(ValueError, match=r"queue policy 'fifo' is already registered; registered: fifo, sjf, las, lifo"):
        register_queue_policy("fifo", lifo)
    with pytest.raises(ValueError, match=r"name='' must be a non-empty string"):
        register_queue_policy("", lifo)
    with pytest.raises(ValueError, match=r"decide='lifo' must be a function of a QueueState"):
        register_queue_policy("other", "lifo")
    with pytest.raises(ValueError, match=r"periodic=1 must be True or False"):
        register_queue_policy("other", lifo, periodic=1)
    assert list(QUEUE_POLICIES) == ["fifo", "sjf", "las", "lifo"]   # nothing refused was registered


def test_a_policy_that_never_starts_a_job_is_reported_stuck():
    register_queue_policy("idle", lambda state: None)
    try:
        with pytest.raises(RuntimeError, match=r"queue 'idle' stuck at t=0.0: waiting \[0\] cannot start"):
            simulate_jobs([Job(0, 0.0, 1, "resnet50", 10)], TINY, "idle")
    finally:
        del QUEUE_POLICIES["idle"]
