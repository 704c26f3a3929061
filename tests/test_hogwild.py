"""Hogwild on shared memory: staleness against a forced interleaving, and in real runs."""
import threading
from types import SimpleNamespace

import pytest
import torch

from commlab.sync.hogwild import Hogwild, SharedParams
from commlab.train import Trainer


def test_hogwild_trains_and_records_staleness():
    h = Trainer(model="mlp", data="digits", workers=4, sync="hogwild", lr=0.05, progress=False,
                eval_every=60).fit(steps=60)
    assert h.loss[-1] < 0.8 * h.loss[0] and h.final_accuracy > 0.6
    assert all(len(row) == 4 for row in h.staleness) and len(h.staleness) == 60
    flat = [s for row in h.staleness for s in row]
    # a write can only be stale by the other threads' writes: at most 3 threads x 60 steps of them
    assert all(isinstance(s, int) and 0 <= s <= 3 * 60 for s in flat)
    # four threads interleave (torch releases the GIL in forward and backward): some writes are
    # stale. How many depends on the OS scheduler (a quarter to a half here, fewer on a loaded
    # machine); the exact rule is checked with a forced interleaving below
    assert any(s > 0 for s in flat)
    assert h.bytes_sent[0] == [0, 0, 0, 0]  # memory, not a network


class _Worker:
    """What Hogwild.round uses of a worker: a model, an optimizer's lr, gradient(). Its gradient
    is a fixed tensor; ``pause`` makes gradient() wait between the read and the write."""

    def __init__(self, grad, pause=None):
        self.model = torch.nn.Linear(4, 1, bias=False)
        self.optimizer = SimpleNamespace(param_groups=[{"lr": 0.5, "weight_decay": 0.0}])
        self.grad, self.pause = grad, pause
        self.has_read = threading.Event()

    def gradient(self):
        self.model.weight.grad = self.grad.clone().view(1, 4)
        self.has_read.set()
        if self.pause is not None:
            assert self.pause.wait(10)
        return 1.0


def test_staleness_counts_exactly_the_writes_between_read_and_write():
    """Thread A reads, then waits while B makes three full steps; A's write is 3 stale, B's are
    fresh, and x is x0 - lr (g_A + 3 g_B) with every update applied (powers of 2: exact sums)."""
    x0 = torch.tensor([1.0, 2.0, -4.0, 0.5])
    ga, gb = torch.tensor([1.0, 0.0, 2.0, 0.0]), torch.tensor([0.0, 4.0, 0.25, 1.0])
    go = threading.Event()
    a, b = _Worker(ga, pause=go), _Worker(gb)
    shared = SharedParams(a.model)
    shared.x.copy_(x0)
    sync_a, sync_b = Hogwild(), Hogwild()
    sync_a.bind(shared)
    sync_b.bind(shared)
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("a", sync_a.round(a)))
    thread.start()
    assert a.has_read.wait(10)
    stale_b = [sync_b.round(b)["staleness"] for _ in range(3)]
    go.set()
    thread.join(10)
    assert stale_b == [0, 0, 0] and out["a"]["staleness"] == 3
    assert shared.updates == 4
    assert torch.equal(shared.x, x0 - 0.5 * (ga + 3 * gb))
    assert torch.equal(a.model.weight.detach().view(-1), shared.x)  # the writer's model is the new x
    assert sync_b.round(b)["staleness"] == 0 and shared.updates == 5  # after A's write B reads afresh


def test_one_thread_is_sgd():
    h = Trainer(model="mlp", data="digits", workers=1, sync="hogwild", lr=0.1, progress=False,
                eval_every=1000).fit(steps=10)
    ref = Trainer(model="mlp", data="digits", workers=1, sync="bsp", lr=0.1, progress=False,
                  eval_every=1000).fit(steps=10)
    assert h.loss == pytest.approx(ref.loss, rel=1e-5) and all(row == [0] for row in h.staleness)


def test_hogwild_needs_threads_and_plain_sgd():
    with pytest.raises(ValueError, match="sync='hogwild' runs on runtime='threads' only; got runtime='gloo'"):
        Trainer(sync="hogwild", runtime="gloo")
    with pytest.raises(ValueError, match="sync='hogwild' applies plain SGD steps; use momentum=0"):
        Trainer(sync="hogwild", momentum=0.9)
    with pytest.raises(ValueError, match="sync='hogwild' talks over its ranks itself and takes no arch"):
        Trainer(sync="hogwild", arch="ring")
    with pytest.raises(ValueError, match="sync='hogwild' sends its values exactly, with no compression"):
        Trainer(sync="hogwild", compress="fp16")
