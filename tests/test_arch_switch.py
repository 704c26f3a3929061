"""commlab.arch.switch: the switch rank's sum equals an all-reduce of the fixed-point values
(exactly) and of the floats (to the rounding bound), through a pool that never holds more than
its slots, with every byte honest; on threads and on Gloo; refusals."""
import pytest
import torch

from commlab.arch.switch import INT32_MAX, scale_for, switch_allreduce
from commlab.runtime import RankError, launch

WORKERS, N = 3, 1000


def _values(rank):
    g = torch.Generator().manual_seed(rank)
    return torch.randn(N, generator=g) * (rank + 1)


def _run(comm, slots, elements):
    x = _values(comm.rank) if comm.rank < WORKERS else torch.zeros(0)
    out = switch_allreduce(comm, x, slots=slots, elements=elements)
    return out, comm.stats.bytes_sent, comm.stats.bytes_recv


@pytest.mark.parametrize("runtime,slots,elements", [("threads", 4, 64), ("threads", 1, 7), ("gloo", 3, 50)])
def test_sum_equals_the_all_reduce_and_the_pool_stays_bounded(runtime, slots, elements):
    results = launch(_run, WORKERS + 1, runtime, args=(slots, elements))
    inputs = [_values(r) for r in range(WORKERS)]
    scale = scale_for(max(float(x.abs().max()) for x in inputs), WORKERS)
    exact = sum(torch.round(x.double() * scale) for x in inputs) / scale
    for out, _, _ in results[:WORKERS]:
        assert torch.equal(out, exact.float())  # the integer sum, whatever order packets came in
        assert torch.allclose(out, sum(inputs), atol=WORKERS / (2 * scale) + 1e-6)
    record = results[WORKERS][0]
    chunks = -(-N // elements)
    assert 1 <= record["slots_used"] <= min(slots, chunks)  # how many fill at once depends on timing
    assert record["pool_bytes"] == slots * elements * 4 and record["chunks"] == chunks
    wire = 4 * (N + chunks)  # int32 values and one index per packet
    for _, sent, recv in results[:WORKERS]:
        assert sent == wire + 16 and recv == wire + 8  # plus the scale exchange: (max, length) out, max back


def test_scale_never_overflows_int32():
    for m in (1e-6, 0.37, 1.0, 5e3):
        f = scale_for(m, 8)
        assert 8 * m * f <= INT32_MAX < 2 * 8 * m * f
    assert scale_for(0.0, 4) == 1.0


def _unequal(comm):
    return switch_allreduce(comm, torch.ones(5 + comm.rank))


def test_refusals():
    with pytest.raises(RankError, match="vectors differ in length: \\[5, 6\\]"):
        launch(_unequal, 3, "threads", timeout=5)
    with pytest.raises(RankError, match="slots=0 must be an integer >= 1"):
        launch(lambda c: switch_allreduce(c, torch.ones(3), slots=0), 2, "threads", timeout=5)
    with pytest.raises(RankError, match="at least one worker and the switch rank"):
        launch(lambda c: switch_allreduce(c, torch.ones(3)), 1, "threads", timeout=5)


def test_the_trainer_trains_through_the_switch_as_through_a_ring():
    """arch="switchml": one switch rank after the workers; the losses are the ring's to within the
    fixed-point rounding; each worker sends its vector once per step; the switch counts the steps."""
    from commlab.net import Network
    from commlab.train import Trainer

    kw = dict(workers=3, net=Network("10GbE"), progress=False, seed=0)
    switch, ring = Trainer(arch="switchml(slots=4, elements=32)", **kw), Trainer(arch="ring", **kw)
    hs, hr = switch.fit(steps=5), ring.fit(steps=5)
    assert hs.loss == pytest.approx(hr.loss, rel=1e-5)
    sent = hs.bytes_sent[0][0]
    assert all(row == [sent] * 3 for row in hs.bytes_sent)  # every worker, every step, the same packets
    assert all(row == [sent - 8] * 3 for row in hs.bytes_recv)  # the sums back; the scale's max is 8 bytes, not 16
    assert hs.server_bytes_sent == [5 * 3 * (sent - 8)]  # the switch sends what the workers receive
    assert hs.server_bytes_recv == [5 * 3 * sent + 3 * 16]  # and takes what they send, and three goodbyes
    with pytest.raises(ValueError, match=r"compress='qsgd' over arch='switchml': carries no compression \(use None\)"):
        Trainer(arch="switchml", compress="qsgd", **kw)
    with pytest.raises(ValueError, match="arch='switchml' does not send a schedule's messages"):
        Trainer(arch="switchml", schedule="wfbp", **kw)
    with pytest.raises(ValueError, match="switchml: slots=0"):
        Trainer(arch="switchml(slots=0)", **kw)


def test_the_simulator_knows_the_switch():
    from commlab import sim
    from commlab.arch import get
    from commlab.arch.innetwork import ina_time
    from commlab.net.link import get_link

    c = sim.Cluster(4, 1, inter="100GbIB")
    assert sim.comm_time(c, "switchml")(1e8) == ina_time(1e8, get_link("100GbIB"))
    assert get("switchml(slots=16)").time(1e8, 4, "100GbIB") == ina_time(1e8, "100GbIB", 16, 64)
    assert sim.iteration("resnet50", c, arch="switchml", schedule="wfbp").time > 0
    with pytest.raises(ValueError, match="no switch"):
        sim.iteration("resnet50", c, arch="switchml", level="message")
