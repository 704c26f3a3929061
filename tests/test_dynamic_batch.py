"""BSP with a growing batch."""
import pytest

from commlab.sync import get
from commlab.train import Trainer

KW = dict(model="mlp", data="digits", workers=2, lr=0.1, progress=False, eval_every=1000, batch_size=16)


def test_growth_one_is_bsp():
    assert Trainer(sync="dynamic_batch(growth=1.0)", **KW).fit(steps=6).loss == \
        pytest.approx(Trainer(sync="bsp", **KW).fit(steps=6).loss, rel=1e-6)


def test_batch_sizes_follow_the_schedule_and_bytes_stay_per_step():
    s = get("dynamic_batch(growth=1.5, max_batch=100)")
    assert [s.batch_size(16, t) for t in range(7)] == [16, 24, 36, 54, 81, 100, 100]
    h = Trainer(sync="dynamic_batch(growth=1.5, max_batch=100)", **KW).fit(steps=7)
    bsp = Trainer(sync="bsp", **KW).fit(steps=7)
    assert h.samples == [2 * b for b in (16, 24, 36, 54, 81, 100, 100)]
    assert h.bytes_sent == bsp.bytes_sent  # a bigger batch, the same all-reduce


def test_bad_arguments():
    with pytest.raises(ValueError, match="growth must be >= 1"):
        get("dynamic_batch(growth=0.9)")
    with pytest.raises(ValueError, match="max_batch must be None or an integer >= 1"):
        get("dynamic_batch(max_batch=0)")


def test_gloo_matches_threads():
    kw = dict(KW, workers=4, sync="dynamic_batch(growth=2.0)")
    threads, gloo = Trainer(**kw).fit(steps=4), Trainer(runtime="gloo", **kw).fit(steps=4)
    assert gloo.loss == pytest.approx(threads.loss, rel=1e-4) and gloo.samples == threads.samples
