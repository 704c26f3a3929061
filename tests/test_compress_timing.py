"""The step-time model of chapter 07: its closed forms against the simulated clock of the
library's own aggregation, its scaling, and steps to a target accuracy."""
import math

import pytest
import torch

from commlab import compress
from commlab.arch.aggregate import aggregate
from commlab.compress.timing import StepProfile, profile, steps_to_target, time_to_accuracy
from commlab.history import History
from commlab.arch import ring
from commlab.net import Network, cost
from commlab.runtime import launch

SPECS = [None, "fp16", "randk(0.05)", "topk(0.01)", "topk(0.01)+ef", "qsgd(levels=4)", "signsgd", "gtopk(0.01)",
         "powersgd(rank=2)", "atomo(rank=2)", "terngrad", "dgc(0.01)", "laq"]


def _clock(comm, spec, shape):
    g = torch.Generator().manual_seed(comm.rank)
    x = torch.randn(shape, generator=g)
    c = compress.get(spec)
    if c is not None and c.aggregation != "sum":
        c.seed += comm.rank
    aggregate(comm, c, x, key=0)
    return comm.now


@pytest.mark.parametrize("spec", SPECS, ids=[str(s) for s in SPECS])
@pytest.mark.parametrize("link", ["10GbE", "1GbWAN"])
def test_comm_seconds_is_the_simulated_clock(spec, link):
    shape, n = (96, 80), 8
    prof = profile(spec, torch.randn(shape), n, measure=False)
    assert prof.seconds == 0.0
    clock = max(launch(_clock, n, net=Network(link, flops=None), args=(spec, shape)))
    assert math.isclose(prof.comm_seconds(n, link), clock, rel_tol=1e-9)


def test_messages_and_scale():
    x = torch.randn(256, 256)
    dense = profile(None, x, 4)
    assert dense.messages == (("allreduce", 4 * x.numel()),) and dense.bytes_per_element == 4
    top = profile("topk(0.01)", x, 4, measure=False)
    assert top.messages == (("allgather", compress.get("topk(0.01)").payload_bytes(x.shape)),)
    half = profile("fp16", x, 4, measure=False)
    assert half.messages == (("allreduce", 2 * x.numel()),)
    low = profile("powersgd(rank=3)", x, 4, measure=False)
    assert low.messages == (("allreduce", 4 * 256 * 3), ("allreduce", 4 * 256 * 3))
    tree = profile("gtopk(0.01)", x, 4, measure=False)
    assert tree.messages[0][0] == "tree"
    # a model of `scale` such tensors: every message `scale` times larger
    for prof in (dense, top, low, tree):
        for s in (1.0, 100.0):
            want = 0.0
            for kind, nbytes in prof.messages:
                n = s * nbytes
                want += {"allreduce": ring.cost(n, 4, "1GbWAN"),
                         "allgather": cost.allgather_ring(n, 4, "1GbWAN"),
                         "tree": 2 * cost.reduce(n, 4, "1GbWAN")}[kind]
            assert math.isclose(prof.comm_seconds(4, "1GbWAN", s), want, rel_tol=1e-12)
    # t_step = compute + scale * seconds + comm
    p = StepProfile("x", 10, (("allreduce", 40),), 0.5)
    assert math.isclose(p.step_seconds(2, "10GbE", compute=1.0, scale=3.0),
                        1.0 + 1.5 + ring.cost(120, 2, "10GbE"), rel_tol=1e-12)


def test_messages_are_the_declared_collectives():
    """profile sends what the compressor declares (wire); a payload whose size depends on the
    data (a threshold) is the one this x gives."""
    x = torch.randn(96, 80, generator=torch.Generator().manual_seed(0))
    for spec in ("terngrad", "powersgd(rank=2)", "gtopk(0.01)", "randk(0.05)", "qsgd", "signsgd", "topk(0.01)+ef"):
        assert profile(spec, x, 4, measure=False).messages == compress.get(spec).wire(x.shape, x.dtype), spec
    kept = int((x.abs() > 0.5).sum())
    assert profile("threshold(0.5)", x, 4, measure=False).messages == \
        (("allgather", compress.get("threshold(0.5)").payload_bytes(x.shape, kept=kept)),)


def test_measured_seconds_are_positive():
    x = torch.randn(64, 64)
    for spec in ("topk(0.01)+ef", "powersgd(rank=2)", "randk(0.1)", "laq"):
        assert profile(spec, x, 4, repeats=1).seconds > 0


def test_steps_to_target_and_time():
    h = History(steps=[1, 2, 3, 4], test_accuracy=[math.nan, 0.5, math.nan, 0.9])
    assert steps_to_target(h, 0.5) == 2 and steps_to_target(h, 0.8) == 4 and steps_to_target(h, 0.95) is None
    p = StepProfile("x", 10, (("allreduce", 40),), 0.25)
    assert time_to_accuracy(None, p, 2, "10GbE") == math.inf
    assert math.isclose(time_to_accuracy(4, p, 2, "10GbE", compute=1.0), 4 * p.step_seconds(2, "10GbE", 1.0))


def test_errors():
    with pytest.raises(ValueError, match="workers"):
        profile(None, torch.randn(4), 0)
    with pytest.raises(ValueError, match="valid collectives"):
        StepProfile("x", 1, (("broadcast", 4),), 0.0)
