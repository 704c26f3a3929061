"""sim.iteration: whole iterations against independent recurrences and closed forms."""
import random

import pytest

from commlab import schedule, sim
from commlab.net.link import LinkModel, get_link
from commlab.sim import Cluster

IB = get_link("100GbIB-survey")
ETH = get_link("10GbE-mgwfbp")


@pytest.fixture(scope="module")
def profiles():
    return {name: sim.builtin(name) for name in sim.BUILTINS}


def random_profile(layers=30, seed=0):
    rng = random.Random(seed)
    forward = [rng.uniform(1e-4, 3e-3) for _ in range(layers)]
    backward = [rng.uniform(2e-4, 6e-3) for _ in range(layers)]
    return sim.Profile(forward, backward, [4 * rng.randint(1, 2_000_000) for _ in range(layers)], batch=32)


def wfbp_oracle(tf, tb, sizes, n, link):
    """The recurrence of Shi, Chu, Li (MG-WFBP), 0-indexed: layer L-1 is the last."""
    L = len(tb)
    tc = [2 * (n - 1) * link.alpha + 2 * (n - 1) / n * m * link.beta for m in sizes]
    tau_b = [0.0] * L
    for l in range(L - 2, -1, -1):
        tau_b[l] = tau_b[l + 1] + tb[l + 1]
    tau_c = [0.0] * L
    tau_c[L - 1] = tb[L - 1]
    for l in range(L - 2, -1, -1):
        tau_c[l] = max(tau_c[l + 1] + tc[l + 1], tau_b[l] + tb[l])
    return sum(tf) + tau_c[0] + tc[0]


@pytest.mark.parametrize("n", [2, 4, 16, 64])
@pytest.mark.parametrize("link", [IB, ETH, LinkModel(1e-3, 1e-9, "slow")])
def test_wfbp_on_a_flat_ring_is_the_recurrence(n, link):
    p = random_profile(seed=n)
    it = sim.iteration(p, Cluster.flat(n, link), schedule="wfbp")
    assert it.time == pytest.approx(wfbp_oracle(p.forward_s, p.backward_s, p.grad_bytes, n, link), rel=1e-12)


def test_wfbp_recurrence_on_resnet50(profiles):
    p = profiles["resnet50"]
    for n, link in [(8, ETH), (128, IB)]:
        it = sim.iteration(p, Cluster.flat(n, link), method="wfbp_a2a", framework="ideal")
        assert it.time == pytest.approx(wfbp_oracle(p.forward_s, p.backward_s, p.grad_bytes, n, link), rel=1e-12)


@pytest.mark.parametrize("n", [2, 16])
def test_baseline_is_compute_then_one_allreduce(n):
    p = random_profile()
    it = sim.iteration(p, Cluster.flat(n, ETH))
    total = 2 * (n - 1) * ETH.alpha + 2 * (n - 1) / n * p.total_bytes * ETH.beta
    assert it.time == pytest.approx(sum(p.forward_s) + sum(p.backward_s) + total, rel=1e-12)
    assert len(it.messages) == 1 and it.plan.name == "none"


@pytest.mark.parametrize("gpus", [4, 16, 64, 1024])
@pytest.mark.parametrize("net", ["100GbIB-survey", "10GbE-mgwfbp"])
def test_mg_wfbp_never_slower_than_wfbp_or_baseline(profiles, gpus, net):
    c = Cluster(gpus // 4, 4, inter=net)
    for p in [*profiles.values(), random_profile(seed=gpus)]:
        mg = sim.iteration(p, c, method="mg_wfbp").time
        assert mg <= sim.iteration(p, c, method="wfbp_a2a").time * (1 + 1e-12)
        assert mg <= sim.iteration(p, c, method="bsp_a2a").time * (1 + 1e-12)


@pytest.mark.parametrize("method", sorted(sim.METHODS))
def test_every_byte_travels_in_exactly_one_message(profiles, method):
    p = profiles["bert-base"]
    it = sim.iteration(p, Cluster(4, 4), method=method)
    carried = sorted(i for m in it.messages for i in m.pieces)
    assert carried == list(range(len(it.plan.pieces)))
    per_layer = [0] * p.layers
    for piece in it.plan.pieces:
        per_layer[piece.layer] += piece.nbytes
    assert per_layer == list(p.grad_bytes)
    assert sum(m.nbytes for m in it.messages) == p.total_bytes


def test_what_runs_is_what_is_simulated(profiles):
    p, c = profiles["resnet50"], Cluster(8, 4)
    it = sim.iteration(p, c, method="mg_wfbp")
    horovod = sim.FRAMEWORKS["horovod"]
    assert it.plan == schedule.get("mg_wfbp").plan(p, lambda n: sim.comm_time(c)(n) + horovod.cost(n))
    assert it.arch == "allreduce" and sim.iteration(p, c, method="bsp_ps").arch == "byteps"
    assert sim.iteration(p, c, method="bytescheduler_ps").plan == schedule.get("bytescheduler").plan(p)


@pytest.mark.parametrize("arch,spec", [("allreduce", "wfbp"), ("allreduce", "mg_wfbp"),
                                       ("allreduce", "bytescheduler"), ("ps", None)])
def test_message_level_agrees_on_a_flat_ring(profiles, arch, spec):
    p, c = profiles["resnet50"], Cluster.flat(16, IB)
    closed = sim.iteration(p, c, arch=arch, schedule=spec)
    message = sim.iteration(p, c, arch=arch, schedule=spec, level="message")
    assert message.time == pytest.approx(closed.time, rel=0.01)
    assert message.p2p > 0 and message.events >= message.p2p and message.level == "message"


def test_message_level_on_nodes_of_four(profiles):
    p, c = profiles["bert-large"], Cluster(4, 4, inter="10GbE-mgwfbp")
    for arch, spec in (("allreduce", "mg_wfbp"), ("ps", "wfbp")):
        closed = sim.iteration(p, c, arch=arch, schedule=spec)
        message = sim.iteration(p, c, arch=arch, schedule=spec, level="message")
        assert message.time == pytest.approx(closed.time, rel=0.01)


def test_a_framework_adds_its_cost_per_message_and_the_message_level_refuses_it(profiles):
    p, c = profiles["resnet50"], Cluster(2, 4)
    ideal = sim.iteration(p, c, method="bsp_a2a", framework="ideal")
    horovod = sim.iteration(p, c, method="bsp_a2a")  # the method's own framework
    assert horovod.time == pytest.approx(ideal.time + sim.FRAMEWORKS["horovod"].per_op, rel=1e-12)
    assert sim.iteration(p, Cluster(1, 1), method="wfbp_a2a").speedup == pytest.approx(1)  # one GPU: no op
    with pytest.raises(ValueError, match="level='message' times bytes only.*framework='horovod'"):
        sim.iteration(p, c, method="mg_wfbp", level="message")
    with pytest.raises(ValueError, match=r"not NCCL's choice; use Cluster\(allreduce=...\) with one of ring, hierarchical"):
        sim.iteration(p, sim.survey.testbed(8), arch="allreduce", level="message")
    with pytest.raises(ValueError, match="arch='byteps'"):
        sim.iteration(p, c, arch="byteps", level="message")
    with pytest.raises(ValueError, match="unknown framework 'mpi'; valid: ideal, horovod-nccl, horovod, horovod-mpi, horovod-cpu, bytescheduler, byteps, ddp"):
        sim.iteration(p, c, framework="mpi")


def test_throughput_and_speedup(profiles):
    p = profiles["bert-large"]
    it = sim.iteration(p, Cluster(2, 4), method="mg_wfbp")
    assert it.throughput == pytest.approx(8 * p.batch / it.time)
    assert it.speedup == pytest.approx(8 * (sum(p.forward_s) + sum(p.backward_s)) / it.time)
    assert it.single == pytest.approx(8 / 49)
    one = sim.iteration(p, Cluster(1, 1), method="wfbp_a2a")
    assert one.speedup == pytest.approx(1) and one.throughput == pytest.approx(49)
    assert "mg_wfbp allreduce" in repr(it)


def test_a_builtin_by_name_and_ps_servers():
    it = sim.iteration("resnet50", Cluster.flat(4, IB), arch="ps", schedule="wfbp", servers=2)
    assert it.profile is sim.builtin("resnet50") and it.arch == "ps"


def test_timeline_draws_one_period(profiles):
    p = profiles["resnet50"]
    for method in ("wfbp_a2a", "bytescheduler_a2a"):
        it = sim.iteration(p, Cluster(2, 4, inter="10GbE-mgwfbp"), method=method)
        tl = it.timeline
        assert list(tl.columns) == ["stream", "kind", "name", "layers", "bytes", "ready", "start", "end"]
        back, fwd, comm = (tl[tl.kind == k] for k in ("backward", "forward", "allreduce"))
        assert len(back) == len(fwd) == p.layers and len(comm) == len(it.messages)
        assert back.start.min() == 0 and back.end.max() == pytest.approx(sum(p.backward_s))
        assert fwd.end.max() == pytest.approx(it.time)
        assert (fwd.start.values[1:] >= fwd.end.values[:-1] - 1e-15).all()  # one layer at a time
        assert comm.bytes.sum() == p.total_bytes and (comm.start >= comm.ready - 1e-15).all()


@pytest.mark.parametrize("kwargs,match", [
    ({"method": "horovod"}, "unknown method 'horovod'; valid: bsp_ps, bsp_a2a, wfbp_ps"),
    ({"method": "mg_wfbp", "schedule": "wfbp"}, "method='mg_wfbp' sets arch and schedule"),
    ({"method": "mg_wfbp", "arch": "ps"}, "method='mg_wfbp' sets arch and schedule"),
    ({"arch": "gossip"}, "unknown arch 'gossip'; valid: allreduce, ps, byteps"),
    ({"schedule": "fifo"}, "unknown schedule 'fifo'; valid:"),
    ({"level": "packet"}, "unknown level 'packet'; valid: closed, message"),
    ({"servers": 2}, "servers=2 applies to arch='ps' only"),
    ({"arch": "ps", "servers": -1}, "needs servers to be an integer >= 1"),
])
def test_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sim.iteration(random_profile(), Cluster.flat(4), **kwargs)


def test_bad_profile_and_cluster():
    with pytest.raises(ValueError, match="'vgg16'"):
        sim.iteration("vgg16", Cluster.flat(4))
    with pytest.raises(ValueError, match="unknown model 3; valid: resnet50, .* a profile file"):
        sim.iteration(3, Cluster.flat(4))
    with pytest.raises(ValueError, match="cluster must be a sim.Cluster"):
        sim.iteration(random_profile(), 8)
