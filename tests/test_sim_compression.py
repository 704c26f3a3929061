"""commlab.sim.compression: every registered compressor in a simulated iteration, its bytes, its
collectives and its arithmetic against closed forms written out here, and the refusals."""
import math

import pytest

from commlab import compress, sim
from commlab.arch import ring
from commlab.compress import COMPRESSORS
from commlab.net.link import LinkModel
from commlab.schedule.profile import Profile
from commlab.sim.compression import Unit, collectives, declared

V100 = sim.DEVICES["v100"]


def small(device=V100):
    """Three layers: a conv weight with its bias, a 2-D weight, a vector; 1 ms of compute each."""
    shapes = (((16, 8, 3, 3), (16,)), ((64, 48),), ((300,),))
    nbytes = [4 * sum(math.prod(s) for s in layer) for layer in shapes]
    return Profile([1e-3] * 3, [2e-3] * 3, nbytes, batch=8, shapes=shapes, device=device)


def cluster(link="tcp-10GbE", nodes=4):
    return sim.Cluster(nodes, 1, inter=link)


@pytest.mark.parametrize("name", sorted(COMPRESSORS.names()))
@pytest.mark.parametrize("framework", ["horovod", "ddp"])
def test_every_registered_compressor_runs(name, framework):
    prof, c = small(), cluster()
    base = sim.iteration(prof, c, framework=framework)
    it = sim.iteration(prof, c, compress=name, framework=framework)
    assert it.compression is not None and it.compression.arithmetic_s > 0
    assert it.time > 0 and math.isfinite(it.time)
    assert it.compression.wire_bytes > 0
    assert base.compression is None


@pytest.mark.parametrize("spec", ["topk(0.01)+ef", "topk(0.05)+qsgd(levels=16)", "qsgd+ef"])
def test_chains_and_error_feedback_run(spec):
    it = sim.iteration(small(), cluster(), compress=spec, framework="horovod")
    assert it.compression.arithmetic_s > sim.iteration(small(), cluster(), compress=spec.split("+")[0],
                                                       framework="horovod").compression.arithmetic_s * 0.99


def test_one_message_by_bucket_is_compute_encode_collectives_decode():
    """BSP in one bucket (framework ideal): forward + backward + encode, the collectives, decode."""
    prof, c = small(), cluster()
    comp = compress.get("qsgd")
    d = prof.total_bytes // 4
    cost = comp.cost((d,))
    (kind, m), = comp.wire((d,))
    assert kind == "allgather"
    encode = V100.work_seconds(cost.encode, d)
    decode = V100.work_seconds(comp.combine_work((d,), c.gpus), d)
    gather = (c.gpus - 1) * c.inter.time(m)
    expected = sum(prof.forward_s) + sum(prof.backward_s) + encode + gather + decode
    assert sim.iteration(prof, c, compress="qsgd").time == pytest.approx(expected, rel=1e-12)


def test_one_message_by_tensor_sums_every_tensor():
    """Horovod: each tensor its own encode, decode and payload; one fused operation per collective."""
    prof, c = small(), cluster()
    comp, fw = compress.get("fp16"), sim.framework("horovod")
    units = [Unit.of(comp, s, declared(V100), c.gpus) for layer in prof.shapes for s in layer]
    summed = sum(u.wire[0][1] for u in units)
    assert summed == sum(2 * math.prod(s) for layer in prof.shapes for s in layer)  # fp16's summable tensors
    expected = (sum(prof.forward_s) + sum(prof.backward_s) + sum(u.encode + u.decode for u in units)
                + ring.cost(summed, c.gpus, c.inter) + fw.per_op)
    it = sim.iteration(prof, c, compress="fp16", framework="horovod", schedule="none")
    assert it.time == pytest.approx(expected, rel=1e-12)
    assert it.compression.wire_bytes == summed


def test_per_tensor_arithmetic_costs_more_launches_than_one_bucket():
    prof, c = small(), cluster()
    tensor = sim.iteration(prof, c, compress="signsgd", framework="horovod").compression
    bucket = sim.iteration(prof, c, compress="signsgd", framework="ddp").compression
    assert tensor.compress_per == "tensor" and bucket.compress_per == "bucket"
    assert tensor.arithmetic_s > bucket.arithmetic_s


def test_whole_tensor_compressors_stay_whole_under_buckets():
    it = sim.iteration(small(), cluster(), compress="powersgd", framework="ddp")
    assert it.compression.compress_per == "tensor"
    kinds = [w for u in (Unit.of(compress.get("powersgd"), (64, 48), declared(V100), 4),) for w in u.wire]
    assert [k for (_, k), _ in kinds] == ["allreduce", "allreduce"]


def test_free_network_only_adds_arithmetic_and_a_slow_one_pays():
    """On a link that costs nothing compression can only lose; on 1 GbE top-k 1% of ResNet-50 pays."""
    prof = small()
    free = sim.Cluster(4, 1, inter=LinkModel(0.0, 0.0, "free"))
    for spec in ("fp16", "topk(0.01)", "signsgd"):
        assert sim.iteration(prof, free, compress=spec).time > sim.iteration(prof, free).time
    resnet = sim.profile("resnet50", batch=64, device="v100")
    slow = sim.Cluster(8, 1, inter="tcp-1GbE")
    assert sim.iteration(resnet, slow, compress="topk(0.01)", framework="horovod").time < \
        sim.iteration(resnet, slow, framework="horovod").time


def test_collectives_on_two_levels():
    c = sim.Cluster(2, 4, intra="PCIe3", inter="tcp-10GbE")
    t = collectives(c)
    assert t["allgather"](1e6) == pytest.approx(max((8 - 1) * link.time(1e6) for link in c.links()))
    assert t["allreduce"](1e6) == pytest.approx(sim.comm_time(c, "allreduce")(1e6))
    assert t["tree"](1e6) == pytest.approx(2 * 3 * c.inter.time(1e6))


def test_one_gpu_compresses_nothing():
    prof, one = small(), sim.Cluster(1, 1)
    assert sim.iteration(prof, one, compress="topk(0.01)").time == sim.iteration(prof, one).time


def test_device_from_the_profile_or_given():
    prof = small(device=None)
    with pytest.raises(ValueError, match="give device="):
        sim.iteration(prof, cluster(), compress="fp16")
    fast, slow = (sim.iteration(prof, cluster(), compress="qsgd", device=d).compression.arithmetic_s
                  for d in ("h100", "rtx2080ti"))
    assert fast < slow


def test_refusals():
    prof = small()
    with pytest.raises(ValueError, match="arch='allreduce'"):
        sim.iteration(prof, cluster(), arch="ps", compress="fp16")
    with pytest.raises(ValueError, match="level='closed'"):
        sim.iteration(prof, cluster(), compress="fp16", level="message")
    with pytest.raises(ValueError, match="unknown compressor"):
        sim.iteration(prof, cluster(), compress="zip")


@pytest.mark.parametrize("schedule", ["wfbp", "mg_wfbp", "fusion(mb=1)", "bytescheduler", "p3"])
@pytest.mark.parametrize("framework", ["horovod", "ddp"])
def test_every_schedule_with_compression(schedule, framework):
    prof, c = small(), cluster()
    it = sim.iteration(prof, c, schedule=schedule, compress="topk(0.1)+ef", framework=framework)
    assert it.time >= sum(prof.forward_s) + sum(prof.backward_s)


def test_frameworks_run_their_own_schedule_by_default():
    """Horovod's 5 ms cycle and DDP's 25 MB buckets when no schedule is given; "none" is one message."""
    prof = sim.profile("resnet50", batch=64, device="v100")
    c = sim.Cluster(8, 1, inter="tcp-25GbE")
    assert sim.iteration(prof, c, framework="horovod").plan.name == "cycle"
    assert sim.iteration(prof, c, framework="ddp").plan.name == "fusion"
    assert sim.iteration(prof, c, framework="horovod", schedule="none").plan.name == "none"
    overlapped, one = (sim.iteration(prof, c, framework="horovod", schedule=s).time for s in (None, "none"))
    assert overlapped < one
