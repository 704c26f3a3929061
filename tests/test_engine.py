"""schedule.engine, the real executor: which gradient elements a message carries, its simulated
clock against the dispatcher's steady state (the real executor equals the simulator), the
timeline it logs, and a failing communication thread surfacing as an error naming its rank."""
import math
import threading
import time

import pytest
import torch
import torch.nn as nn

from commlab import data
from commlab import schedule as S
from commlab.arch import get as get_arch
from commlab.models import build_model
from commlab.runtime import fork_is_safe
from commlab.history import Diverged
from commlab.arch.exchange import AllReduceExchange, ScheduledServerExchange
from commlab.net.clock import Network
from commlab.runtime import RankError
from commlab.schedule import Piece, Plan, Profile
from commlab.schedule.engine import Engine, flat_ranges, segments
from commlab.train import Trainer


from scheduled_fixtures import digits, one_thread  # noqa: E402,F401  (pytest fixtures)


# ----------------------------------------------------------------------------- segments
def test_segments_and_flat_ranges_by_hand():
    # parameters of 6, 3 and 10 elements; layer 0 owns the first two, layer 1 the third
    numels = [6, 3, 10]
    prof = Profile([0, 0], [0, 0], [36, 40], params=[(0, 1), (2,)])
    pieces = (Piece(0, 8, 32), Piece(0, 0, 8), Piece(0, 32, 36), Piece(1, 0, 40))
    plan = Plan("hand", pieces, buckets=((1, 0), (2, 3)))
    # bytes [8, 32) of layer 0 = elements [2, 8): param 0 [2, 6) and param 1 [0, 2)
    assert segments(plan, prof, numels) == [[(0, 2, 6), (1, 0, 2)], [(0, 0, 2)], [(1, 2, 3)], [(2, 0, 10)]]
    msgs = S.dispatch(plan, prof, lambda n: 1.0)
    # flat offsets 0, 6, 9: message 0 = pieces 1 then 0, message 1 = pieces 2 and 3
    assert flat_ranges(msgs, plan, prof, numels) == [[(0, 2), (2, 6), (6, 8)], [(8, 9), (9, 19)]]


def test_flat_ranges_cover_the_flat_vector_once(digits):
    model = nn.Sequential(nn.Linear(64, 30), nn.ReLU(), nn.Linear(30, 10))
    prof = S.model_profile(model, digits.x_train[:4])
    numels = [p.numel() for p in model.parameters()]
    for spec in ("wfbp", "p3(slice_kb=0.3)", "bytescheduler(partition_mb=0.0011, credit_mb=0.003)",
                 "fusion(mb=0.001, first_mb=0.0001)"):
        plan = S.get(spec).plan(prof, lambda n: 1e-4 + n * 1e-9)
        ranges = flat_ranges(S.dispatch(plan, prof, lambda n: 1e-4 + n * 1e-9), plan, prof, numels)
        covered = sorted(r for m in ranges for r in m)
        at = 0
        for a, b in covered:
            assert a == at and b > a
            at = b
        assert at == sum(numels)


def test_engine_refuses_a_profile_that_misses_parameters():
    class FakeComm:
        rank, clock = 0, None

    model = nn.Linear(3, 2)
    prof = Profile([0], [0], [24], params=[(0,)])  # the bias is in no layer
    plan = S.get("wfbp").plan(prof)
    with pytest.raises(ValueError, match="cover the model's parameters exactly once"):
        Engine(FakeComm(), model, None, prof, plan, S.dispatch(plan, prof, lambda n: 0.0))


# ----------------------------------------------------------------------------- the clock
SCHEDULES = ["wfbp", "mg_wfbp", "fusion(mb=0.5, first_mb=0.2)", "bytescheduler(partition_mb=0.2, credit_mb=0.4)",
             "p3"]


@pytest.mark.parametrize("arch", ["native", "ring"])
@pytest.mark.parametrize("flops", [2e10, 1e12])
def test_real_executor_equals_the_simulator(digits, arch, flops):
    """Per-step simulated seconds of a real scheduled run (threads, hooks, a comm thread per
    rank, the architecture's collectives on the clock) in steady state equal the dispatcher's
    ``iteration`` of the same plan under the architecture's closed form."""
    net = Network("10GbE", flops=flops)
    workers, batch = 4, 32
    comm_time = lambda n: get_arch(arch).time(n, workers, net.link)  # noqa: E731
    kw = dict(model="mlp", data=digits, workers=workers, arch=arch, net=net, progress=False, batch_size=batch,
              model_kw={"hidden": [256] * 12})
    base = Trainer(**kw).fit(3)
    per_step = [b - a for a, b in zip(base.sim_time, base.sim_time[1:])]
    tr0 = Trainer(schedule="wfbp", **kw)
    prof = tr0.schedule.profile
    expect = S.iteration(S.baseline(prof), prof, comm_time)[0]
    assert per_step == pytest.approx([expect] * 2, rel=1e-4)  # unscheduled: compute, then one message
    gains = {}
    for spec in SCHEDULES:
        tr = Trainer(schedule=spec, **kw)
        # the plan built independently, the way the Trainer does: profile one mini-batch, plan
        probe = S.model_profile(build_model("mlp", digits, hidden=[256] * 12), digits.x_train[:batch], flops=flops)
        assert probe == tr.schedule.profile
        mine = S.get(spec).plan(probe, comm_time)
        assert mine == tr.schedule.plan
        assert [m.pieces for m in S.dispatch(mine, probe, comm_time)] == [m.pieces for m in tr.schedule.messages]
        h = tr.fit(4)
        steps = [b - a for a, b in zip(h.sim_time, h.sim_time[1:])]
        t_iter = S.iteration(mine, probe, comm_time)[0]
        assert steps[1:] == pytest.approx([t_iter] * 2, rel=0.01), spec
        assert h.loss[:3] == base.loss  # scheduling changes no loss
        gains[spec] = t_iter / expect
    # the profile's compute is the Trainer's FLOPs at the network's rate
    assert sum(prof.forward_s) + sum(prof.backward_s) == pytest.approx(tr0.flops_per_sample * batch / flops, rel=1e-9)
    if flops == 2e10:  # compute comparable to communication: overlap pays
        assert gains["mg_wfbp"] < 0.8 and min(gains.values()) < 0.8
    else:  # compute negligible: MG-WFBP merges everything into the baseline's one message
        assert gains["mg_wfbp"] == pytest.approx(1.0)


def test_timeline_rows(digits):
    net = Network("10GbE", flops=2e10)
    for spec in ("fusion(mb=0.5, first_mb=0.2)", "bytescheduler(partition_mb=0.2, credit_mb=0.4)"):
        tr = Trainer(model="mlp", data=digits, workers=2, net=net, schedule=spec, progress=False,
                     model_kw={"hidden": [256] * 6})
        steps = 3
        h = tr.fit(steps)
        msgs = tr.schedule.messages
        assert len(h.timeline) == steps * len(msgs)
        for i, row in enumerate(h.timeline):
            m = msgs[i % len(msgs)]
            assert row["step"] == i // len(msgs) + 1 and row["message"] == i % len(msgs)
            assert row["layers"] == list(m.layers) and row["bytes"] == m.nbytes
            assert row["ready"] <= row["start"] <= row["end"]
            assert 0 <= row["wall_start"] <= row["wall_end"]
        # each step's messages keep the dispatcher's timing, shifted by the step's backward start
        for k in range(steps):
            rows = h.timeline[k * len(msgs):(k + 1) * len(msgs)]
            t0 = rows[0]["ready"] - msgs[0].ready
            assert [r["start"] - t0 for r in rows] == pytest.approx([m.start for m in msgs], abs=1e-12)
            assert [r["end"] - t0 for r in rows] == pytest.approx([m.end for m in msgs], abs=1e-12)
        assert sum(r["bytes"] for r in h.timeline[:len(msgs)]) == tr.schedule.profile.total_bytes
    # without a network model the simulated fields are NaN, the wall clock is there
    h = Trainer(model="mlp", data=digits, workers=2, schedule="wfbp", progress=False).fit(2)
    assert h.timeline and all(math.isnan(r["start"]) and r["wall_end"] >= r["wall_start"] for r in h.timeline)


# ----------------------------------------------------------------------------- failures
@pytest.mark.parametrize("arch, runtime", [("native", "threads"), ("ring", "threads"), ("ps", "threads"),
                                           ("native", "gloo")])
def test_a_failing_comm_thread_names_its_rank(digits, monkeypatch, arch, runtime):
    if runtime == "gloo" and not fork_is_safe():
        pytest.skip("the failure is injected by a monkeypatch, which only forked ranks inherit (this machine "
                    "starts ranks from a fork server)")
    monkeypatch.delenv("COMMLAB_START_METHOD", raising=False)  # forked where that is safe, whatever the default
    cls = ScheduledServerExchange if arch == "ps" else AllReduceExchange
    original = cls.message

    def broken(self, m, tensors):
        comm = self.client.comm if arch == "ps" else self.comm
        if comm.rank == 1 and m == 1:
            raise OSError("link down")
        return original(self, m, tensors)

    monkeypatch.setattr(cls, "message", broken)
    start = time.monotonic()
    with pytest.raises(RankError) as info:
        Trainer(model="mlp", data=digits, workers=3, arch=arch, schedule="wfbp", progress=False, runtime=runtime,
                model_kw={"hidden": [16] * 4}, timeout=30).fit(3)
    assert time.monotonic() - start < 10  # not a hang until the timeout
    assert info.value.rank == 1
    assert "rank 1" in str(info.value) and "link down" in str(info.value) and "step 1" in str(info.value)


class _OneUnused(nn.Module):
    """A layer that runs in forward but that the loss never uses: backward never finishes its gradient."""

    def __init__(self, dataset):
        super().__init__()
        self.head = nn.Linear(dataset.in_features, dataset.num_classes)
        self.spare = nn.Linear(dataset.in_features, 4)

    def forward(self, x):
        self.spare(x.flatten(1))  # computed and thrown away
        return self.head(x.flatten(1))


def test_an_unused_parameter_is_an_error_naming_it_not_a_hang(digits):
    start = time.monotonic()
    with pytest.raises(RankError, match=r"layer 'spare' got no gradient in the backward of step 1"):
        Trainer(model=_OneUnused, data=digits, workers=2, schedule="wfbp", progress=False, timeout=60).fit(2)
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("spec", ["mg_wfbp", "bytescheduler(partition_mb=0.2, credit_mb=0.4)"])
def test_the_simulator_package_equals_the_real_run(digits, spec):
    """commlab.sim on a flat cluster of the run's link (a ring, closed form and message by
    message) predicts a real threads run's simulated seconds per step within 1%."""
    from commlab import sim

    net, workers = Network("10GbE", flops=2e10), 4
    tr = Trainer(model="mlp", data=digits, workers=workers, arch="ring", net=net, schedule=spec, progress=False,
                 model_kw={"hidden": [256] * 12})
    h = tr.fit(4)
    real = [b - a for a, b in zip(h.sim_time, h.sim_time[1:])][1:]
    cluster = sim.Cluster.flat(workers, net.link)
    for level in ("closed", "message"):
        predicted = sim.iteration(tr.schedule.profile, cluster, schedule=spec, level=level).time
        assert real == pytest.approx([predicted] * len(real), rel=0.01), level


def test_a_failed_rank_leaves_no_communication_thread_behind():
    """A rank that raises never closes its engine; the engine's thread sees its rank gone and leaves."""
    with pytest.raises(Diverged):
        Trainer(model="mlp", data="digits", workers=2, schedule="wfbp", lr=1e6, seed=0, progress=False).fit(20)
    deadline = time.monotonic() + 5
    while any(t.name.startswith("commlab-comm-rank") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name.startswith("commlab-comm-rank") for t in threading.enumerate())
