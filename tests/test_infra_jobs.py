"""commlab.infra.jobs: the workload (deterministic, skewed to small jobs, sizes that fit); three
hand-built jobs whose start times under FIFO, SJF and LAS follow from iteration_time by hand; work
conservation and utilization on a workload; queueing and placement that pay off; speed; refusals."""
import math
import time

import pytest

from commlab.infra.jobs import QUEUES, Job, Result, simulate_jobs, workload
from commlab.infra.placement import PLACEMENTS, Datacenter, iteration_time, topology_aware

TINY = Datacenter(1, 2, 2)          # 4 GPUs: nodes 0 and 1 in one rack
SMALL = Datacenter(2, 2, 4)         # 16 GPUs over two racks


def test_workload_is_deterministic_skewed_and_fits():
    dc = Datacenter(1, 2, 4)
    jobs = workload(400, dc, seed=3, iterations=(50, 500))
    assert jobs == workload(400, dc, seed=3, iterations=(50, 500))
    assert jobs != workload(400, dc, seed=4, iterations=(50, 500))
    assert [j.id for j in jobs] == list(range(400)) and jobs[0].arrival == 0.0
    assert all(a.arrival <= b.arrival for a, b in zip(jobs, jobs[1:]))
    assert {j.gpus for j in jobs} == {1, 2, 4, 8}                 # 16 > 8 GPUs is never drawn
    assert all(50 <= j.iterations <= 500 for j in jobs)
    count = {s: sum(j.gpus == s for j in jobs) for s in (1, 2, 4, 8)}
    assert count[1] > count[2] > count[4] > count[8]
    assert count[1] > 0.4 * len(jobs)
    gaps = [b.arrival - a.arrival for a, b in zip(jobs, jobs[1:])]
    assert sum(gaps) / len(gaps) == pytest.approx(30.0, rel=0.15)


def _hol_jobs():
    return [Job(0, 0.0, 3, "resnet50", 100), Job(1, 1.0, 4, "resnet50", 50), Job(2, 2.0, 1, "resnet50", 10)]


def test_fifo_head_of_line_blocking_by_hand():
    r = simulate_jobs(_hol_jobs(), TINY, "fifo")
    t_a = iteration_time("resnet50", {0: 2, 1: 1}, TINY)          # A: 3 GPUs over both nodes
    t_b = iteration_time("resnet50", {0: 2, 1: 2}, TINY)
    assert r.start[0] == 0.0
    assert r.start[1] == pytest.approx(100 * t_a)                # B waits for A
    assert r.start[2] == pytest.approx(100 * t_a + 50 * t_b)     # C fits at once, but waits behind B
    assert r.finish[2] == pytest.approx(100 * t_a + 50 * t_b + 10 * iteration_time("resnet50", {0: 1}, TINY))
    assert r.jct[2] == pytest.approx(r.finish[2] - 2.0)
    assert [e for _, _, e, _ in r.timeline].count("preempt") == 0


def test_sjf_runs_the_short_job_first_by_hand():
    r = simulate_jobs(_hol_jobs(), TINY, "sjf")
    t_a = iteration_time("resnet50", {0: 2, 1: 1}, TINY)
    t_c = iteration_time("resnet50", {1: 1}, TINY)                # the one GPU A left free
    assert (r.start[0], r.start[2]) == (0.0, 2.0)
    assert r.finish[2] == pytest.approx(2.0 + 10 * t_c)
    assert r.start[1] == pytest.approx(100 * t_a)                # B needs all 4: after A and C
    assert r.average_jct < simulate_jobs(_hol_jobs(), TINY, "fifo").average_jct
    # two waiting jobs that cannot run together: the shorter goes first, though it came later
    jobs = [Job(0, 0.0, 4, "resnet50", 100), Job(1, 1.0, 3, "bert-base", 400), Job(2, 2.0, 2, "resnet50", 30)]
    t_x = iteration_time("resnet50", {0: 2, 1: 2}, TINY)
    t_z = iteration_time("resnet50", {0: 2}, TINY)
    r = simulate_jobs(jobs, TINY, "sjf")
    assert r.start[2] == pytest.approx(100 * t_x) and r.start[1] == pytest.approx(100 * t_x + 30 * t_z)
    fifo = simulate_jobs(jobs, TINY, "fifo")
    assert fifo.start[1] == pytest.approx(100 * t_x) and fifo.start[2] > fifo.finish[1] - 1e-9


def test_las_preempts_a_long_job_for_a_newcomer():
    jobs = [Job(0, 0.0, 4, "resnet50", 1000), Job(1, 10.0, 1, "resnet50", 20)]
    r = simulate_jobs(jobs, TINY, "las", quantum=60.0)
    t_l = iteration_time("resnet50", {0: 2, 1: 2}, TINY)
    t_n = iteration_time("resnet50", {0: 1}, TINY)
    events = [(t, i, e) for t, i, e, _ in r.timeline]
    assert events[:4] == [(0.0, 0, "start"), (10.0, 0, "preempt"), (10.0, 1, "start"),
                          (pytest.approx(10 + 20 * t_n), 1, "finish")]
    assert events[4][1:] == (0, "resume") and events[5][1:] == (0, "finish")
    assert r.finish[1] == pytest.approx(10 + 20 * t_n)
    assert r.finish[0] == pytest.approx(1000 * t_l + 20 * t_n)   # lost only its GPUs for a while
    assert r.start[0] == 0.0
    fifo = simulate_jobs(jobs, TINY, "fifo")
    assert fifo.start[1] == pytest.approx(1000 * t_l) and r.jct[1] < fifo.jct[1]


def _work_done(r, jobs, dc):
    """Iterations run by each job, from its timeline's running intervals and their speeds."""
    done, since = {j.id: 0.0 for j in jobs}, {}
    model = {j.id: j.model for j in jobs}
    for t, i, event, where in r.timeline:
        if event in ("start", "resume"):
            assert i not in since
            since[i] = (t, where)
        else:
            t0, w0 = since.pop(i)
            assert w0 == where
            done[i] += (t - t0) / iteration_time(model[i], where, dc)
    assert not since
    return done


@pytest.mark.parametrize("queue", QUEUES)
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_every_job_finishes_and_work_is_conserved(queue, placement):
    jobs = workload(40, SMALL, seed=1, mean_interarrival=40.0, sizes=(1, 2, 4, 8), iterations=(100, 2000))
    r = simulate_jobs(jobs, SMALL, queue, placement, quantum=30.0)
    assert isinstance(r, Result) and set(r.finish) == {j.id for j in jobs}
    done = _work_done(r, jobs, SMALL)
    for j in jobs:
        assert done[j.id] == pytest.approx(j.iterations, rel=1e-9)
        assert r.start[j.id] >= j.arrival and r.finish[j.id] > r.start[j.id]
        alone = j.iterations * iteration_time(j.model, topology_aware(SMALL.empty(), SMALL, j.gpus), SMALL)
        assert r.slowdown[j.id] == pytest.approx(r.jct[j.id] / alone)
    times = [t for t, *_ in r.timeline]
    assert times == sorted(times)
    assert 0 < r.utilization <= 1
    assert r.makespan == pytest.approx(max(r.finish.values()) - jobs[0].arrival)
    assert r.average_jct == pytest.approx(sum(r.jct.values()) / len(jobs))
    busy = sum((t1 - t0) * g for t0, t1, g in _intervals(r, jobs))
    assert r.utilization == pytest.approx(busy / (SMALL.gpus * r.makespan))
    if queue != "las":
        assert all(e in ("start", "finish") for _, _, e, _ in r.timeline)


def _intervals(r, jobs):
    since, gpus = {}, {j.id: j.gpus for j in jobs}
    for t, i, event, _ in r.timeline:
        if event in ("start", "resume"):
            since[i] = t
        else:
            yield since.pop(i), t, gpus[i]


def test_queueing_and_placement_pay_off_on_a_workload():
    jobs = workload(60, SMALL, seed=0, mean_interarrival=60.0, sizes=(1, 2, 4, 8), iterations=(100, 5000))
    r = {(q, p): simulate_jobs(jobs, SMALL, q, p) for q in QUEUES for p in ("spread", "topology_aware")}
    assert min(r["sjf", "topology_aware"].average_jct, r["las", "topology_aware"].average_jct) \
        < r["fifo", "topology_aware"].average_jct
    assert r["las", "topology_aware"].average_jct < r["fifo", "topology_aware"].average_jct
    for q in QUEUES:
        assert r[q, "topology_aware"].average_jct < r[q, "spread"].average_jct
    assert simulate_jobs(jobs, SMALL, "las", "spread") == r["las", "spread"]      # deterministic


def test_two_hundred_jobs_are_fast():
    dc = Datacenter(4, 4, 8)
    jobs = workload(200, dc, seed=0)
    for q in QUEUES:
        for p in PLACEMENTS:
            began = time.perf_counter()
            r = simulate_jobs(jobs, dc, q, p)
            assert time.perf_counter() - began < 2.0
            assert len(r.finish) == 200 and math.isfinite(r.average_jct)


def test_refusals():
    jobs = _hol_jobs()
    with pytest.raises(ValueError, match=r"queue='lifo'; valid: fifo, sjf, las"):
        simulate_jobs(jobs, TINY, "lifo")
    with pytest.raises(ValueError, match=r"placement='random'; valid: consolidated, spread, topology_aware"):
        simulate_jobs(jobs, TINY, placement="random")
    with pytest.raises(ValueError, match=r"quantum=0 must be a number of seconds > 0"):
        simulate_jobs(jobs, TINY, "las", quantum=0)
    with pytest.raises(ValueError, match=r"job 5 needs gpus=8 but the cluster has 4 GPUs \(valid: 1..4\)"):
        simulate_jobs([Job(5, 0.0, 8, "resnet50", 10)], TINY)
    with pytest.raises(ValueError, match=r"method='nope'; valid: bsp_ps"):
        simulate_jobs(jobs, TINY, method="nope")
    with pytest.raises(ValueError, match=r"job ids must be distinct"):
        simulate_jobs([jobs[0], jobs[0]], TINY)
    with pytest.raises(ValueError, match=r"model='gpt'; valid: resnet50"):
        Job(0, 0.0, 1, "gpt", 10)
    with pytest.raises(ValueError, match=r"gpus=0 must be an integer >= 1"):
        Job(0, 0.0, 0, "resnet50", 10)
    with pytest.raises(ValueError, match=r"arrival=-1.0 must be a number of seconds >= 0"):
        Job(0, -1.0, 1, "resnet50", 10)
    with pytest.raises(ValueError, match=r"mean_interarrival=0 must be a number of seconds > 0"):
        workload(5, TINY, mean_interarrival=0)
    with pytest.raises(ValueError, match=r"sizes=\(8,\) must each offer one choice \(sizes <= 4\)"):
        workload(5, TINY, sizes=(8,))
