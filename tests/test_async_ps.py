"""ASP, SSP, backup workers and round-robin over the parameter server."""
import random

import pytest
import torch

from commlab.arch.ps import PSClient, run_server
from commlab.sync.server_policies import ASPPolicy, BackupPolicy, RoundRobinPolicy, SSPPolicy
from commlab.net import Network, Stragglers
from commlab.runtime import launch
from commlab.sync import get
from commlab.train import Trainer


def _quadratic_run(policy, workers, steps, slow, dim=6, lr=0.1, runtime="threads"):
    """W workers push grad f(x) = x - target_w of a per-worker quadratic; the server runs the policy.
    ``slow``: {rank: compute seconds per step}. Returns the server's result."""
    net = Network("10GbE", slowdown=slow, flops=None) if runtime == "threads" else None

    def body(comm):
        x0 = torch.zeros(dim)
        if comm.rank == workers:
            return run_server(comm, x0, workers, lr=lr, policy=policy)
        client = PSClient(comm, x0, workers, lr=lr, policy=policy)
        x = x0.clone()
        target = torch.full((dim,), float(comm.rank))
        for _ in range(steps):
            comm.compute(seconds=1e-3)
            client.push(x - target)
            x = client.pull()
        client.close()
        return x

    return launch(body, workers + 1, runtime=runtime, net=net, timeout=30)


class RecordingSSP(SSPPolicy):
    """SSP that records, for every answer, the answered worker's lead over the slowest."""

    def __init__(self, staleness):
        super().__init__(staleness)
        self.leads = []

    def can_answer(self, server, worker):
        ok = super().can_answer(server, worker)
        if ok:
            self.leads.append(server.clocks[worker] - min(server.clocks[v] for v in server.live))
        return ok


@pytest.mark.parametrize("trial", range(6))
def test_ssp_never_exceeds_its_bound_under_random_stragglers(trial):
    rnd = random.Random(trial)
    s, workers = rnd.choice([0, 1, 2, 3]), rnd.choice([2, 3, 4, 5])
    slow = {w: rnd.choice([1.0, 2.0, 5.0, 10.0]) for w in range(workers)}
    policy = RecordingSSP(s)
    _quadratic_run(policy, workers, steps=12, slow=slow)
    assert policy.leads and max(policy.leads) <= s
    if max(slow.values()) >= 5 * min(slow.values()):
        assert max(policy.leads) == s  # the bound binds: fast workers are held back


def test_asp_staleness_and_updates():
    out = _quadratic_run(ASPPolicy(), 3, steps=8, slow={2: 3.0})
    server = out[-1]
    assert server["updates"] == 24 and len(server["applied"]) == 24 and server["dropped"] == []
    assert all(stale >= 0 for _, _, stale in server["applied"]) and max(s for _, _, s in server["applied"]) >= 2


def test_backup_averages_w_minus_b_and_drops_the_rest():
    workers, b, steps = 4, 1, 10
    out = _quadratic_run(BackupPolicy(1), workers, steps, slow={3: 4.0})
    server = out[-1]
    applied, dropped = server["applied"], server["dropped"]
    assert len(applied) + len(dropped) == workers * steps
    # the straggler's gradients are dropped while the others run; once they have left, it runs alone
    assert dropped and all(w == 3 for w, _ in dropped)
    assert all(stale == 0 for _, _, stale in applied)  # only gradients of the current x are averaged
    # while all four run, each update averages the W - b = 3 fast workers' gradients
    fast = [w for w, _, _ in applied if w != 3]
    assert len(fast) == (workers - b) * steps and server["updates"] >= steps


def test_backup_with_random_stragglers_drops_b_per_step():
    net = Network("10GbE", flops=1e9, slowdown=Stragglers(prob=0.3, factor=5.0, seed=1))
    h = Trainer(model="mlp", data="digits", workers=4, sync="backup(backups=1)", net=net, progress=False,
                eval_every=1000).fit(steps=12)
    assert 8 <= sum(h.dropped) <= 14  # about one late gradient per step is dropped (b = 1)
    assert all(sum(s is None for s in row) == d for row, d in zip(h.staleness, h.dropped))
    assert all(s == 0 for row in h.staleness for s in row if s is not None)


def test_round_robin_takes_workers_in_cyclic_order():
    out = _quadratic_run(RoundRobinPolicy(), 4, steps=5, slow={0: 6.0})
    assert [w for w, _, _ in out[-1]["applied"]] == [0, 1, 2, 3] * 5


def test_asp_with_one_worker_is_sgd():
    h = Trainer(model="mlp", data="digits", workers=1, sync="asp", lr=0.1, progress=False, eval_every=1000).fit(steps=15)
    ref = Trainer(model="mlp", data="digits", workers=1, sync="bsp", lr=0.1, progress=False, eval_every=1000).fit(steps=15)
    assert h.loss == pytest.approx(ref.loss, rel=1e-6, abs=1e-7)
    assert all(row == [0] for row in h.staleness)


@pytest.mark.parametrize("sync", ["asp", "ssp(staleness=1)", "backup(backups=1)", "round_robin"])
def test_trainer_histories_are_deterministic_with_stragglers(sync):
    net = Network("10GbE", flops=1e9, slowdown=Stragglers(prob=0.2, factor=4.0, seed=0))
    runs = [Trainer(model="mlp", data="digits", workers=4, sync=sync, net=net, progress=False,
                    eval_every=5).fit(steps=10) for _ in range(2)]
    assert runs[0].same_as(runs[1])
    assert len(runs[0].staleness) == 10 and len(runs[0].dropped) == 10


def test_ssp_zero_keeps_lockstep_and_asp_is_faster_with_a_straggler():
    net = Network("10GbE", flops=1e9, slowdown={3: 4.0})
    kw = dict(model="mlp", data="digits", workers=4, net=net, progress=False, eval_every=1000)
    asp, ssp0 = Trainer(sync="asp", **kw).fit(steps=10), Trainer(sync="ssp(staleness=0)", **kw).fit(steps=10)
    bsp = Trainer(sync="bsp", arch="ps", **kw).fit(steps=10)
    assert max(s for row in ssp0.staleness for s in row) <= 3  # at most the other W-1 pushes of its step
    # the fast workers' steps end earlier under ASP than under lockstep (their mean time)
    assert asp.sim_time[4] <= bsp.sim_time[4] * 1.01


def test_sync_needs_a_parameter_server():
    with pytest.raises(ValueError, match="runs over a parameter server.*arch='ring'"):
        Trainer(sync="asp", arch="ring")
    assert Trainer(sync="asp").config.arch == "ps"
    with pytest.raises(ValueError, match="averages models, which arch='ps' does not offer; valid: arch=.*ring"):
        Trainer(sync="local_sgd(period=2)", arch="ps")
    with pytest.raises(ValueError, match=r"backup\(backups=4\) leaves no gradient"):
        Trainer(sync="backup(backups=4)", workers=4)
    with pytest.raises(ValueError, match="staleness must be an integer >= 0"):
        get("ssp(staleness=-1)")


@pytest.mark.parametrize("sync", ["asp", "ssp(staleness=1)", "backup(backups=1)", "round_robin"])
def test_gloo_runs_the_same_code(sync):
    h = Trainer(model="mlp", data="digits", workers=4, sync=sync, runtime="gloo", progress=False,
                eval_every=6).fit(steps=6)
    assert len(h.loss) == 6 and h.final_accuracy > 0.1 and len(h.staleness) == 6


@pytest.mark.parametrize("sync", ["asp", "ssp(staleness=2)", "backup(backups=1)"])
def test_arrival_order_policies_refuse_several_shards(sync):
    with pytest.raises(ValueError, match="runs on a single server shard; got shards=2"):
        Trainer(sync=sync, arch="ps(shards=2)")


def test_round_robin_runs_on_several_shards():
    h = Trainer(model="mlp", data="digits", workers=4, sync="round_robin", arch="ps(shards=2)", net="10GbE",
                progress=False, eval_every=1000).fit(steps=6)
    assert [w for w, _, _ in h.applied] == [0, 1, 2, 3] * 6
