"""A cluster receiving a stream of training jobs: queueing and placement policies, event by event.

**The model.** A job arrives at ``arrival`` seconds asking for ``gpus`` GPUs to run
``iterations`` data-parallel iterations of a built-in model. Once placed (:mod:`.placement`) it
runs at 1 / :func:`~commlab.infra.placement.iteration_time` iterations per second, a speed set by
its footprint: more nodes and, above all, more racks make its all-reduce slower. It holds its
GPUs, all or nothing (gang scheduling), until it finishes or is preempted. Time jumps from event
to event (arrivals, completions and, for a periodic queue such as LAS, every ``quantum`` s).

**Queues.** A queue policy picks who runs; the policies live in a registry by name,
:data:`~commlab.infra.queue_policies.QUEUE_POLICIES` (:mod:`.queue_policies`, where each one's
rule and source are written), and :func:`~commlab.infra.queue_policies.register_queue_policy` adds
one. The built-ins, :data:`QUEUES`:

* ``"fifo"``: strict arrival order, with head-of-line blocking.
* ``"sjf"``: shortest job first by estimated service (it needs the job's length in advance);
  non-preemptive.
* ``"las"``: least attained service, after Tiresias (Gu et al., NSDI 2019): all jobs, running
  and waiting, re-ranked by GPU-seconds run so far at every event and every ``quantum`` seconds;
  preemptive.

**Workload.** :func:`workload` draws Poisson arrivals and job sizes skewed to small jobs, as in
Microsoft's Philly trace (Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for
DNN Training Workloads", USENIX ATC 2019), where most jobs use a single GPU and few use many;
lengths are log-uniform, so a few jobs are much longer than most.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import checks
from ..sim.devices import BUILTINS
from ..sim.iteration import METHODS
from .placement import PLACEMENTS, Datacenter, iteration_time, topology_aware
from .queue_policies import BUILTIN_QUEUES, QueueState, queue_policy

QUEUES = BUILTIN_QUEUES  # the built-in queue policies; every registered one: queue_policies.QUEUE_POLICIES
_EPS = 1e-12  # relative slack for completions that coincide in floating point


@dataclass(frozen=True)
class Job:
    """A request: ``gpus`` GPUs for ``iterations`` iterations of ``model`` from ``arrival`` s."""

    id: int
    arrival: float
    gpus: int
    model: str
    iterations: int

    def __post_init__(self):
        checks.integer("id", self.id, 0, numpy=True)
        checks.integer("gpus", self.gpus, numpy=True)
        checks.integer("iterations", self.iterations, numpy=True)
        a = self.arrival
        if not checks.is_number(a) or not 0 <= a < math.inf:
            raise ValueError(f"arrival={a!r} must be a number of seconds >= 0")
        if self.model not in BUILTINS:
            raise ValueError(f"model={self.model!r}; valid: {', '.join(BUILTINS)}")


def workload(n_jobs: int, dc: Datacenter, seed: int = 0, mean_interarrival: float = 30.0,
             models=BUILTINS, sizes=(1, 2, 4, 8, 16), iterations=(200, 20000)) -> list[Job]:
    """``n_jobs`` jobs: exponential gaps of mean ``mean_interarrival`` s (the first at 0), a model
    uniformly from ``models``, a size from ``sizes`` with probability proportional to 1/size
    (sizes above ``dc.gpus`` dropped), iterations log-uniform in ``iterations`` (lo, hi).
    Deterministic for a seed."""
    checks.integer("n_jobs", n_jobs, numpy=True)
    if not isinstance(dc, Datacenter):
        raise ValueError(f"dc must be a Datacenter, got {dc!r}")
    m = mean_interarrival
    if not checks.is_number(m) or not 0 < m < math.inf:
        raise ValueError(f"mean_interarrival={m!r} must be a number of seconds > 0")
    for model in models:
        if model not in BUILTINS:
            raise ValueError(f"model {model!r} in models; valid: {', '.join(BUILTINS)}")
    for s in sizes:
        checks.integer("size", s, numpy=True)
    fit = sorted({s for s in sizes if s <= dc.gpus})
    if not models or not fit:
        raise ValueError(f"models={models!r} and sizes={sizes!r} must each offer one choice (sizes <= {dc.gpus})")
    lo, hi = iterations
    checks.integer("iterations lo", lo, numpy=True)
    if not checks.is_int(hi) or hi < lo:
        raise ValueError(f"iterations={iterations!r} must be (lo, hi) integers with 1 <= lo <= hi")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(m, n_jobs)
    gaps[0] = 0.0
    weights = np.array([1.0 / s for s in fit])
    size = rng.choice(fit, n_jobs, p=weights / weights.sum())
    which = rng.integers(0, len(models), n_jobs)
    its = np.exp(rng.uniform(math.log(lo), math.log(hi + 1), n_jobs)).astype(int).clip(lo, hi)
    arrival = np.cumsum(gaps)
    return [Job(i, float(arrival[i]), int(size[i]), models[which[i]], int(its[i])) for i in range(n_jobs)]


@dataclass
class Result:
    """Per job (dicts by id): ``start`` (first start), ``finish``, ``jct`` (finish - arrival),
    ``slowdown`` (jct over the job's run time alone on its most compact placement); overall:
    ``average_jct``, ``makespan`` (last finish - first arrival), ``utilization`` (busy GPU-seconds
    over dc.gpus x makespan); ``timeline``: (time, job id, event, placement) with events "start",
    "preempt", "resume", "finish"."""

    start: dict[int, float]
    finish: dict[int, float]
    jct: dict[int, float]
    slowdown: dict[int, float]
    average_jct: float
    makespan: float
    utilization: float
    timeline: list = field(default_factory=list)


def _validate(jobs, dc, queue, placement, quantum, method):
    queue_policy(queue)
    if placement not in PLACEMENTS:
        raise ValueError(f"placement={placement!r}; valid: {', '.join(PLACEMENTS)}")
    if method not in METHODS:
        raise ValueError(f"method={method!r}; valid: {', '.join(METHODS)}")
    if not checks.is_number(quantum) or not 0 < quantum < math.inf:
        raise ValueError(f"quantum={quantum!r} must be a number of seconds > 0")
    if not isinstance(dc, Datacenter):
        raise ValueError(f"dc must be a Datacenter, got {dc!r}")
    if not jobs or not all(isinstance(j, Job) for j in jobs):
        raise ValueError("jobs must be a non-empty list of Job")
    if len({j.id for j in jobs}) != len(jobs):
        raise ValueError("job ids must be distinct")
    for j in jobs:
        if j.gpus > dc.gpus:
            raise ValueError(f"job {j.id} needs gpus={j.gpus} but the cluster has {dc.gpus} GPUs (valid: 1..{dc.gpus})")


def simulate_jobs(jobs: list[Job], dc: Datacenter, queue: str = "fifo", placement: str = "topology_aware",
                  quantum: float = 60.0, method: str = "wfbp_a2a") -> Result:
    """Simulate ``jobs`` arriving at the cluster ``dc``, event by event, under the queue policy
    ``queue`` (a name in :data:`~commlab.infra.queue_policies.QUEUE_POLICIES`; built-ins
    :data:`QUEUES`) and the placement ``placement`` (:data:`~commlab.infra.placement.PLACEMENTS`);
    see the module doc. ``quantum``: the period (s) at which a periodic policy such as LAS is
    woken while jobs wait; ``method``: the training method :func:`commlab.sim.iteration` times."""
    _validate(jobs, dc, queue, placement, quantum, method)
    policy = queue_policy(queue)
    place = PLACEMENTS[placement]
    compact = {}
    for j in jobs:
        key = (j.model, j.gpus)
        if key not in compact:
            compact[key] = iteration_time(j.model, topology_aware(dc.empty(), dc, j.gpus), dc, method)
    alone = {j.id: j.iterations * compact[(j.model, j.gpus)] for j in jobs}
    by_id = {j.id: j for j in jobs}
    arrivals = sorted(jobs, key=lambda j: (j.arrival, j.id))
    free = dc.empty()
    left = {j.id: float(j.iterations) for j in jobs}       # iterations still to run
    attained = {j.id: 0.0 for j in jobs}                   # GPU-seconds run so far
    held: dict[int, dict[int, int]] = {}                   # running job -> placement
    period: dict[int, float] = {}                          # running job -> seconds per iteration
    waiting: list[int] = []
    start, finish, timeline = {}, {}, []
    busy, t, a = 0.0, arrivals[0].arrival, 0

    def run(i, where):
        for node, g in where.items():
            free[node] -= g
        held[i], period[i] = where, iteration_time(by_id[i].model, where, dc, method)
        timeline.append((t, i, "resume" if i in start else "start", dict(where)))
        start.setdefault(i, t)

    def stop(i, event):
        where = held.pop(i)
        del period[i]
        for node, g in where.items():
            free[node] += g
        timeline.append((t, i, event, dict(where)))

    state = QueueState(dc=dc, jobs=by_id, waiting=waiting, held=held, free=free, alone=alone, attained=attained,
                       _place=lambda i: place(free, dc, by_id[i].gpus), _run=run,
                       _stop=lambda i: stop(i, "preempt"), t=t)
    while a < len(arrivals) or held or waiting:
        ends = {i: t + left[i] * period[i] for i in held}
        nxt = min(ends.values(), default=math.inf)
        if a < len(arrivals):
            nxt = min(nxt, arrivals[a].arrival)
        if policy.periodic and waiting:
            nxt = min(nxt, (math.floor(t / quantum + _EPS) + 1) * quantum)
        if nxt == math.inf:
            raise RuntimeError(f"queue {queue!r} stuck at t={t}: waiting {waiting} cannot start on an idle cluster")
        dt = nxt - t
        for i in held:
            left[i] -= dt / period[i]
            attained[i] += dt * by_id[i].gpus
            busy += dt * by_id[i].gpus
        t = state.t = nxt
        for i in sorted(i for i, e in ends.items() if e <= t + _EPS * max(1.0, t)):
            left[i] = 0.0
            finish[i] = t
            stop(i, "finish")
        while a < len(arrivals) and arrivals[a].arrival <= t:
            waiting.append(arrivals[a].id)
            a += 1
        policy.decide(state)

    jct = {j.id: finish[j.id] - j.arrival for j in jobs}
    makespan = max(finish.values()) - arrivals[0].arrival
    return Result(start=start, finish=finish, jct=jct, slowdown={i: jct[i] / alone[i] for i in jct},
                  average_jct=sum(jct.values()) / len(jct), makespan=makespan,
                  utilization=busy / (dc.gpus * makespan) if makespan > 0 else 1.0, timeline=timeline)
