"""AD-PSGD: with one worker it is SGD; the same seed repeats the run; Gloo gives the threads
history; with a persistent straggler the fast workers finish their steps long before it does
(and long before BSP's step); compression is refused."""
import math

import pytest

from commlab import Network, Trainer
from scheduled_fixtures import one_thread  # noqa: F401  (autouse: one intra-op thread)


def fit(steps=10, **kw):
    kw = {"workers": 6, "sync": "adpsgd", "lr": 0.1, "seed": 0, "eval_every": 5, "progress": False, **kw}
    return Trainer(**kw).fit(steps=steps)


def test_one_worker_is_sgd():
    a = fit(workers=1, steps=15, momentum=0.9)
    b = Trainer(workers=1, sync="bsp", lr=0.1, seed=0, eval_every=5, momentum=0.9, progress=False).fit(steps=15)
    assert max(abs(x - y) for x, y in zip(a.loss, b.loss)) < 1e-6
    assert a.consensus == [0.0] * 15


def test_history_and_determinism():
    a, b = fit(net="10GbE"), fit(net="10GbE")
    assert a.same_as(b)
    assert len(a.consensus) == 10 and all(c >= 0 for c in a.consensus)
    assert not math.isnan(a.test_accuracy[4]) and a.loss[-1] < a.loss[0]


def test_gloo_gives_the_threads_history():
    a, b = fit(workers=4, steps=6), fit(workers=4, steps=6, runtime="gloo")
    assert max(abs(x - y) for x, y in zip(a.loss, b.loss)) < 1e-5
    assert a.bytes_sent == b.bytes_sent


def test_a_straggler_does_not_hold_the_others_back():
    slow = Network("10GbE", slowdown={5: 8.0}, flops=1e9)
    h = fit(workers=6, steps=12, net=slow)
    last = h.worker_time[-1]
    assert last[5] > 4 * max(last[:5])  # the fast workers finish long before the straggler
    assert h.sim_time[-1] < last[5]  # the step's time is the median worker's
    bsp = Trainer(workers=6, sync="bsp", lr=0.1, seed=0, progress=False, net=slow).fit(steps=12)
    assert h.sim_time[-1] < bsp.sim_time[-1] / 3


def test_compression_is_refused():
    with pytest.raises(ValueError, match="sync='adpsgd' sends its values exactly, with no compression"):
        Trainer(sync="adpsgd", compress="topk(0.1)", progress=False)
