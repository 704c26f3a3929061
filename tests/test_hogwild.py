"""Hogwild on shared memory."""
import pytest

from commlab.train import Trainer


def test_hogwild_trains_and_records_staleness():
    h = Trainer(model="mlp", data="digits", workers=4, sync="hogwild", lr=0.05, progress=False,
                eval_every=60).fit(steps=60)
    assert h.loss[-1] < 0.8 * h.loss[0] and h.final_accuracy > 0.6
    assert all(len(row) == 4 and all(s >= 0 for s in row) for row in h.staleness)
    assert h.bytes_sent[0] == [0, 0, 0, 0]  # memory, not a network


def test_one_thread_is_sgd():
    h = Trainer(model="mlp", data="digits", workers=1, sync="hogwild", lr=0.1, progress=False,
                eval_every=1000).fit(steps=10)
    ref = Trainer(model="mlp", data="digits", workers=1, sync="bsp", lr=0.1, progress=False,
                  eval_every=1000).fit(steps=10)
    assert h.loss == pytest.approx(ref.loss, rel=1e-5) and all(row == [0] for row in h.staleness)


def test_hogwild_needs_threads_and_plain_sgd():
    with pytest.raises(ValueError, match="use runtime='threads', got 'gloo'"):
        Trainer(sync="hogwild", runtime="gloo")
    with pytest.raises(ValueError, match="takes no arch, compress or momentum"):
        Trainer(sync="hogwild", momentum=0.9)
