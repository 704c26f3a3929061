"""commlab.parallel.pipeline: GPipe and 1F1B give the unsplit model's gradients, the bubble on the
simulated clock is (p-1)/(m+p-1), 1F1B holds at most p-s micro-batches, bytes are 2 m activations."""
import threading

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from commlab.net.clock import Network
from commlab.net.link import LinkModel
from commlab.parallel.group import Group
from commlab.parallel.pipeline import (bubble_fraction, gpipe, one_f_one_b, peak_activations, run_pipeline,
                                       schedule_ops)
from commlab.runtime import launch

WIDTH, BATCH = 6, 12
_LOCK = threading.Lock()


def _model(p):
    with _LOCK:
        torch.manual_seed(0)
        layers = [nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh()) for _ in range(p - 1)]
        model = nn.Sequential(*layers, nn.Linear(WIDTH, 3))
        torch.manual_seed(1)
        x, y = torch.randn(BATCH, WIDTH), torch.randint(0, 3, (BATCH,))
    return model, x, y


def _stage(comm, schedule, m, tf=None, tb=None):
    p = comm.world_size
    model, x, y = _model(p)
    group = Group(comm, range(p))
    stage = model[comm.rank]
    compute = None if tf is None else (lambda op, i: tf if op == "F" else tb)
    timeline = []
    losses = run_pipeline(group, stage, schedule, m, inputs=list(x.tensor_split(m)), targets=list(y.tensor_split(m)),
                          loss_fn=F.cross_entropy, compute=compute, timeline=timeline)
    return losses, [q.grad.clone() for q in stage.parameters()], timeline, comm.now, comm.stats.bytes_sent


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p, m", [(2, 1), (2, 4), (3, 3), (4, 6), (4, 2)])
def test_gradients_equal_the_unsplit_model(schedule, p, m):
    model, x, y = _model(p)
    want = sum(F.cross_entropy(model(xs), ys) for xs, ys in zip(x.tensor_split(m), y.tensor_split(m))) / m
    want.backward()
    results = launch(_stage, p, args=(schedule, m))
    for s, (losses, grads, *_) in enumerate(results):
        for g, q in zip(grads, model[s].parameters()):
            assert torch.allclose(g, q.grad, atol=1e-6)
    assert sum(results[-1][0]) / m == pytest.approx(want.item(), abs=1e-6)


def test_schedules_hold_every_op_once_and_1f1b_alternates():
    for fn in (gpipe, one_f_one_b):
        for ops in fn(4, 6):
            assert sorted(ops) == sorted([("F", i) for i in range(6)] + [("B", i) for i in range(6)])
    assert one_f_one_b(3, 4)[2] == [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2), ("B", 2), ("F", 3), ("B", 3)]
    assert one_f_one_b(3, 4)[0][:4] == [("F", 0), ("F", 1), ("F", 2), ("B", 0)]


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p, m", [(2, 1), (3, 4), (4, 8), (4, 3)])
def test_bubble_on_the_clock_is_the_closed_form(schedule, p, m):
    tf, tb = 1e-3, 2e-3
    results = launch(_stage, p, net=Network(LinkModel(0.0, 0.0), flops=None), args=(schedule, m, tf, tb))
    total = max(r[3] for r in results)
    assert total == pytest.approx((m + p - 1) * (tf + tb))
    for *_, timeline, now, _ in results:
        busy = sum(end - start for _, _, _, start, end in timeline)
        assert 1 - busy / total == pytest.approx(bubble_fraction(p, m))


def test_a_real_link_adds_the_messages_and_bytes_are_two_m_activations():
    p, m = 3, 4
    ideal = launch(_stage, p, net=Network(LinkModel(0.0, 0.0), flops=None), args=("1f1b", m, 1e-3, 2e-3))
    slow = launch(_stage, p, net=Network(LinkModel(1e-4, 1e-9), flops=None), args=("1f1b", m, 1e-3, 2e-3))
    assert max(r[3] for r in slow) > max(r[3] for r in ideal)
    activation = BATCH // m * WIDTH * 4
    assert [r[4] for r in slow] == [m * activation, 2 * m * activation, m * activation]


def test_peak_activations():
    assert [peak_activations("gpipe", 4, 8, s) for s in range(4)] == [8] * 4
    assert [peak_activations("1f1b", 4, 8, s) for s in range(4)] == [4, 3, 2, 1]
    assert peak_activations("1f1b", 4, 2, 0) == 2


def test_gloo_equals_threads():
    threads = launch(_stage, 2, args=("1f1b", 4))
    gloo = launch(_stage, 2, runtime="gloo", args=("1f1b", 4))
    for a, b in zip(threads, gloo):
        assert all(torch.allclose(x, y, atol=1e-6) for x, y in zip(a[1], b[1]))


def test_bad_input_names_the_valid_choices():
    with pytest.raises(ValueError, match="gpipe, 1f1b"):
        schedule_ops("zigzag", 2, 2)
    with pytest.raises(ValueError, match="micro-batches"):
        gpipe(2, 0)
    with pytest.raises(ValueError, match="stages"):
        bubble_fraction(0, 4)
