"""One registration per algorithm, read by every executor (issue 23, section 2).

Each toy of tests/toys/ registers itself through its dimension's public registration alone
(no library file touched), and runs wherever that dimension is read: the toy all-reduce in the
Trainer, in arch.collectives.cost, in the inference model and in the simulator (closed form and
message level), the toy compressor, synchronizer and schedule in the Trainer (the schedule in
the simulator too), the toy queue policy in simulate_jobs. The oracles: each toy rewrites an
algorithm of the library (gather-and-broadcast is the naive all-reduce, the others are the
identity, BSP, WFBP and FIFO), so it must give that algorithm's numbers, or the unchanged run's.

The toys are registered for this module only: the fixture puts every registry back as it was,
so that no other test (the command line's lists, the rulebook's tables) sees them.
"""
import pytest

from commlab import sim
from commlab.arch import ARCHITECTURES, algorithms, collectives, naive, register_allreduce, slowest_hop
from commlab.compress import COMPRESSORS
from commlab.infra import inference
from commlab.infra.jobs import Job, simulate_jobs
from commlab.infra.placement import Datacenter
from commlab.infra.queue_policies import QUEUE_POLICIES
from commlab.net.link import LinkModel
from commlab.schedule import SCHEDULES
from commlab.sim import closed_forms as sim_closed_forms
from commlab.sync import SYNCS
from commlab.train import Trainer
from scheduled_fixtures import digits, one_thread  # noqa: F401  (pytest fixtures)
from toys import toy_allreduce, toy_compressor, toy_queue_policy, toy_schedule, toy_sync

TOYS = (toy_allreduce, toy_compressor, toy_sync, toy_schedule, toy_queue_policy)
TABLES = (algorithms.ALLREDUCES, ARCHITECTURES.builders, COMPRESSORS.builders, SYNCS.builders, SCHEDULES.builders,
          QUEUE_POLICIES)
INTRA = LinkModel(7e-6, 1 / 7e9, "intra")
INTER = LinkModel(30e-6, 1 / 1.25e9, "inter")
ALLREDUCE = toy_allreduce.NAME


@pytest.fixture(scope="module", autouse=True)
def toys():
    """Register every toy for this module; put every registry back afterwards."""
    saved = [dict(t) for t in TABLES]
    try:
        for toy in TOYS:
            toy.register()
        yield
    finally:
        for table, before in zip(TABLES, saved):
            table.clear()
            table.update(before)
    assert not any(toy.NAME in table for toy in TOYS for table in TABLES)


def _fit(ds, steps=4, **kw):
    kw = {"model": "mlp", "data": ds, "workers": 3, "progress": False, "momentum": 0.9, "batch_size": 16,
          "model_kw": {"hidden": [16] * 3}, **kw}
    return Trainer(**kw).fit(steps).loss


# ----------------------------------------------------------------------------- all-reduce
def test_the_toy_all_reduce_trains_as_the_naive_one_it_rewrites(digits):
    toy = _fit(digits, arch=ALLREDUCE)
    assert toy == _fit(digits, arch="naive")  # the same additions in the same order: bit for bit
    assert toy == pytest.approx(_fit(digits, arch="ring"), rel=1e-6, abs=1e-6)  # any correct all-reduce
    # compressed aggregation sums the payloads through it too (the identity compressor: the same losses)
    assert _fit(digits, arch=ALLREDUCE, compress=toy_compressor.NAME) == toy


def test_the_toy_all_reduce_has_its_closed_form_everywhere():
    for n, p in ((1e3, 2), (1e6, 8), (4e7, 17)):
        expected = naive.cost(n, p, INTER)
        assert collectives.cost(n, p, INTER, ALLREDUCE) == expected
        assert ARCHITECTURES.build(ALLREDUCE).time(n, p, INTER) == expected  # what a Trainer's schedule plans with
    assert ALLREDUCE in algorithms.names("flat") and ALLREDUCE in collectives.ALGORITHMS
    step = inference.tp_decode("llama2-70b", 8, INTER, allreduce=ALLREDUCE)
    assert step.communication == 2 * 80 * naive.cost(2 * 8192, 8, INTER)  # 2 all-reduces a layer of 2 b h bytes


def test_the_toy_all_reduce_on_a_cluster_takes_the_slowest_hop():
    c = sim.Cluster(2, 4, intra=INTRA, inter=INTER, allreduce=ALLREDUCE)
    for n in (1e3, 1e7):
        assert sim_closed_forms.allreduce_seconds(n, c) == max(naive.cost(n, 8, INTRA), naive.cost(n, 8, INTER))
    with pytest.raises(ValueError, match=f"allreduce='naive'; valid: ring, hierarchical, {ALLREDUCE}, nccl$"):
        sim.Cluster(2, allreduce="naive")  # registered without a cluster cost: not simulated


def test_the_toy_all_reduce_in_a_simulated_iteration():
    c = sim.Cluster(5, 1, inter=INTER, allreduce=ALLREDUCE)
    closed = sim.iteration("resnet50", c)  # one message after backward: compute, then the all-reduce
    p = closed.profile
    assert closed.time == pytest.approx(sum(p.forward_s) + sum(p.backward_s) + naive.cost(p.total_bytes, 5, INTER),
                                        rel=1e-12)
    message = sim.iteration("resnet50", c, level="message")  # its program: 4 messages in, 4 out
    assert message.time == pytest.approx(closed.time, rel=1e-9) and message.p2p == 2 * 4


def test_the_message_level_needs_a_program():
    register_allreduce("closed_only", toy_allreduce.run, toy_allreduce.cost, on_cluster=slowest_hop(toy_allreduce.cost))
    try:
        c = sim.Cluster(4, 1, inter=INTER, allreduce="closed_only")
        assert sim.iteration("resnet50", c).time > 0
        with pytest.raises(ValueError, match="allreduce='closed_only' has none; programs: ring, hierarchical, "
                                             f"{ALLREDUCE} "):
            sim.iteration("resnet50", c, level="message")
    finally:
        del algorithms.ALLREDUCES["closed_only"], ARCHITECTURES.builders["closed_only"]


def test_a_taken_name_is_refused():
    for name in ("ring", "native", ALLREDUCE):
        with pytest.raises(ValueError, match=f"all-reduce '{name}' is already registered; registered: native, naive"):
            register_allreduce(name, toy_allreduce.run, toy_allreduce.cost)
    with pytest.raises(ValueError, match="cost must be a function, got 3"):
        register_allreduce("another", toy_allreduce.run, 3)


# ----------------------------------------------------------------------------- the other dimensions
def test_the_toy_compressor_the_identity_changes_nothing(digits):
    for arch in ("native", "ring"):
        # layer by layer instead of one flat buffer: the same sums, bit for bit
        assert _fit(digits, arch=arch, compress=toy_compressor.NAME) == _fit(digits, arch=arch)


def test_the_toy_compressor_in_the_simulator_sends_what_it_declares():
    """The identity's payload is the gradient: the simulator's all-reduce carries every byte of it."""
    c = sim.Cluster(4, 1, inter=INTER)
    it = sim.iteration("resnet50", c, compress=toy_compressor.NAME, schedule="none")
    assert it.compression.wire_bytes == it.profile.total_bytes and it.compression.arithmetic_s > 0
    assert it.time > sim.iteration("resnet50", c, schedule="none").time


def test_the_toy_synchronizer_is_bsp(digits):
    for arch in ("native", ALLREDUCE):
        assert _fit(digits, arch=arch, sync=toy_sync.NAME) == _fit(digits, arch=arch)


def test_the_toy_schedule_changes_no_loss(digits):
    assert _fit(digits, schedule=toy_schedule.NAME) == _fit(digits)  # over native: bit for bit
    assert _fit(digits, sync=toy_sync.NAME, arch=ALLREDUCE, schedule=toy_schedule.NAME) == _fit(
        digits, arch=ALLREDUCE)  # three toys together


def test_the_toy_schedule_in_the_simulator_is_wfbp():
    c = sim.Cluster(4, 2, intra=INTRA, inter=INTER)
    toy, wfbp = (sim.iteration("resnet50", c, schedule=s) for s in (toy_schedule.NAME, "wfbp"))
    assert toy.time == wfbp.time and [m.layers for m in toy.messages] == [m.layers for m in wfbp.messages]
    assert len(toy.messages) == toy.profile.layers


def test_the_toy_queue_policy_is_fifo():
    dc = Datacenter(1, 2, 2)
    jobs = [Job(0, 0.0, 4, "resnet50", 100), Job(1, 1.0, 3, "resnet50", 10), Job(2, 2.0, 1, "resnet50", 50),
            Job(3, 3.0, 2, "resnet50", 1000)]
    toy, fifo = simulate_jobs(jobs, dc, toy_queue_policy.NAME), simulate_jobs(jobs, dc, "fifo")
    assert (toy.start, toy.finish, toy.timeline) == (fifo.start, fifo.finish, fifo.timeline)
