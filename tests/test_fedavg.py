"""Federated averaging."""
import math

import pytest

from commlab import data
from commlab.sync import get
from commlab.train import Trainer


def _even():
    ds = data.load("synthetic", seed=0, n=1000)  # 800 training samples: 200 per client
    assert len(ds.y_train) % 4 == 0
    return ds


def test_all_clients_one_local_step_iid_is_bsp():
    ds = _even()
    kw = dict(model="mlp", data=ds, workers=4, lr=0.1, progress=False, eval_every=1000)
    bsp = Trainer(sync="bsp", **kw).fit(steps=10)
    fed = Trainer(sync="fedavg(fraction=1.0, local_steps=1)", **kw).fit(steps=10)
    assert fed.loss == pytest.approx(bsp.loss, rel=1e-5)
    assert fed.final_accuracy == pytest.approx(bsp.final_accuracy, abs=1e-9)


def test_client_sample_and_bytes():
    fed = get("fedavg(fraction=0.5, epochs=1)")
    chosen = [fed.chosen(r, 8, seed=0) for r in range(20)]
    assert all(len(c) == 4 and c == sorted(set(c)) for c in chosen) and len({tuple(c) for c in chosen}) > 5
    assert fed.chosen(3, 8, seed=0) == get("fedavg(fraction=0.5)").chosen(3, 8, seed=0)
    h = Trainer(model="mlp", data="digits", workers=8, sync="fedavg(fraction=0.25, local_steps=2)",
                progress=False, eval_every=1000).fit(steps=4)
    d = Trainer(model="mlp", data="digits", workers=8, progress=False).num_params
    for r, row in enumerate(h.bytes_sent):
        picked = fed.chosen(r, 8, seed=0)[:0] or get("fedavg(fraction=0.25)").chosen(r, 8, seed=0)
        # the server sends the model to each chosen client but itself; each chosen client sends model + n_k back
        assert row[0] == 4 * d * len([k for k in picked if k != 0])
        assert all(row[k] == (4 * (d + 1) if k in picked and k != 0 else 0) for k in range(1, 8))
    assert h.samples == [2 * 2 * 32] * 4  # two clients, two steps of 32


def test_non_iid_training_runs_and_unchosen_clients_report_no_loss():
    h = Trainer(model="mlp", data="digits", workers=4, split="dirichlet", dirichlet_alpha=0.1,
                sync="fedavg(fraction=0.5, epochs=1)", progress=False, eval_every=3, lr=0.05).fit(steps=3)
    assert all(not math.isnan(v) for v in h.loss) and h.final_accuracy > 0.1


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"fraction .* must be in \(0, 1\], got 0"):
        get("fedavg(fraction=0)")
    with pytest.raises(ValueError, match="epochs must be an integer >= 1"):
        get("fedavg(epochs=0)")
    with pytest.raises(ValueError, match="takes no arch"):
        Trainer(sync="fedavg", arch="ring")


def test_gloo_matches_threads():
    kw = dict(model="mlp", data="digits", workers=4, sync="fedavg(fraction=0.5, local_steps=3)", progress=False,
              eval_every=1000)
    threads, gloo = Trainer(**kw).fit(steps=3), Trainer(runtime="gloo", **kw).fit(steps=3)
    assert gloo.loss == pytest.approx(threads.loss, rel=1e-4) and gloo.bytes_sent == threads.bytes_sent
