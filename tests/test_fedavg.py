"""Federated averaging, and its compressed uploads (FedPAQ)."""
import math
import re

import pytest
import torch

from commlab import data
from commlab.compress.qsgd import qsgd_nbytes
from commlab.compress.sparse import sparse_nbytes
from commlab.compress.topk import count
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


@pytest.mark.parametrize("compress", [None, "topk(0.1)+qsgd(levels=16)+ef"])
def test_gloo_matches_threads(compress):
    kw = dict(model="mlp", data="digits", workers=4, sync="fedavg(fraction=0.5, local_steps=3)", progress=False,
              eval_every=1000, compress=compress)
    threads, gloo = Trainer(**kw).fit(steps=3), Trainer(runtime="gloo", **kw).fit(steps=3)
    assert gloo.loss == pytest.approx(threads.loss, rel=1e-4) and gloo.bytes_sent == threads.bytes_sent


# ----------------------------------------------------------------------------- FedPAQ: compressed uploads
FED = dict(model="mlp", data="digits", workers=4, progress=False, eval_every=1000, lr=0.1)
SHAPES = [(64, 64), (64,), (10, 64), (10,)]  # the MLP's layers on digits: 64 -> 64 -> 10


def _upload_bytes(compress, per):
    """What a client uploads per round, from the compressors' payload sizes: n_k as an int32,
    then one payload of the whole update (per="bucket") or one per layer ("tensor")."""
    shapes = SHAPES if per == "tensor" else [(sum(math.prod(s) for s in SHAPES),)]
    if compress == "qsgd(levels=4)":
        return 4 + sum(qsgd_nbytes(s, 4, 512) for s in shapes)
    if compress == "topk(0.1)":
        return 4 + sum(sparse_nbytes(s, count(0.1, math.prod(s)), torch.float32) for s in shapes)
    raise AssertionError(compress)


@pytest.mark.parametrize("per", ["bucket", "tensor"])
@pytest.mark.parametrize("compress", ["qsgd(levels=4)", "topk(0.1)"])
def test_compressed_upload_bytes_are_the_payload_sizes(compress, per):
    sync = "fedavg(fraction=0.75, local_steps=2)"
    raw = Trainer(sync=sync, **FED).fit(steps=4)
    fed = Trainer(sync=sync, compress=compress, compress_per=per, **FED).fit(steps=4)
    d = sum(math.prod(s) for s in SHAPES)
    assert Trainer(**FED).num_params == d
    up = _upload_bytes(compress, per)
    for r in range(4):
        picked = get(sync).chosen(r, 4, seed=0)
        for k in range(1, 4):
            assert raw.bytes_sent[r][k] == (4 * (d + 1) if k in picked else 0)
            assert fed.bytes_sent[r][k] == (up if k in picked else 0)
        assert fed.bytes_sent[r][0] == raw.bytes_sent[r][0] == 4 * d * len([k for k in picked if k != 0])
    # the upload shrinks by the payloads' factor: 32 bits a value against 4 (+ a norm per 512) for
    # 4 levels, against 0.1 x 48 for top-10% (2-byte positions, 4-byte values)
    bits = {"qsgd(levels=4)": 4 + 32 / 512, "topk(0.1)": 0.1 * 48}[compress]
    assert 0.9 * 32 / bits < 4 * (d + 1) / up < 32 / bits


@pytest.mark.parametrize("split", ["iid", "dirichlet"])
def test_an_exact_compressor_gives_fedavg(split):
    """topk(1.0) keeps every coordinate: x_r + sum n_k (x_k - x_r) / sum n_k is the FedAvg average
    up to rounding, so the runs agree, with the unequal n_k of Dirichlet shards too."""
    kw = dict(FED, sync="fedavg(fraction=0.5, local_steps=3)", split=split, dirichlet_alpha=0.3, eval_every=6)
    raw, exact = Trainer(**kw).fit(steps=6), Trainer(compress="topk(1.0)", **kw).fit(steps=6)
    assert exact.loss == pytest.approx(raw.loss, rel=1e-4)
    assert exact.final_accuracy == pytest.approx(raw.final_accuracy, abs=2e-3)


ROUNDS = dict(FED, sync="fedavg(fraction=1.0, local_steps=10)", eval_every=6, lr=0.3)


@pytest.fixture(scope="module")
def uncompressed():
    return Trainer(**ROUNDS).fit(steps=6)


@pytest.mark.parametrize("compress", ["fp16", "qsgd(levels=256)"])
def test_fine_compression_trains_like_fedavg(compress, uncompressed):
    fed = Trainer(compress=compress, **ROUNDS).fit(steps=6)
    assert fed.loss[-1] < 0.5 * fed.loss[0]
    assert fed.loss[-1] == pytest.approx(uncompressed.loss[-1], rel=0.01)
    assert sum(map(sum, fed.bytes_sent)) < sum(map(sum, uncompressed.bytes_sent))


def test_coarse_compression_trains_slower_and_error_feedback_helps(uncompressed):
    """The compressor is really applied: top-1% without error feedback loses most of each update;
    top-5% then 16 levels, with error feedback, trains, a little behind."""
    coarse = Trainer(compress="topk(0.01)", **ROUNDS).fit(steps=6)
    chain = Trainer(compress="topk(0.05)+qsgd(levels=16)+ef", **ROUNDS).fit(steps=6)
    assert coarse.loss[-1] > uncompressed.loss[-1] + 0.5
    assert uncompressed.loss[-1] < chain.loss[-1] < 0.6 * chain.loss[0]
    assert chain.loss[-1] < coarse.loss[-1] - 0.5


@pytest.mark.parametrize("compress,why", [
    ("signsgd", "majority vote"), ("signum", "majority vote"), ("gtopk(0.1)", "own all-reduce protocol"),
    ("powersgd", "own all-reduce protocol"), ("terngrad", "own all-reduce protocol"),
    ("diana", "keeps state in its aggregation"), ("laq", "keeps state in its aggregation"),
])
def test_compressors_fedavg_cannot_use_are_refused(compress, why):
    with pytest.raises(ValueError, match=rf"compress='{re.escape(compress)}' over sync='fedavg': .*{why}.*; "
                                         r"valid: compress=.*qsgd.*topk$"):
        Trainer(sync="fedavg", compress=compress, **FED)
