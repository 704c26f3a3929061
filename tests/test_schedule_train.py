"""Trainer(schedule=...): scheduling never changes the math (bit for bit over native all-reduce
and the parameter server, within float rounding over ring, tree and halving-doubling), scheduled
compressed runs train and are deterministic, bytes per step are those of the unscheduled run,
Gloo gives the threads' losses, and the combinations a schedule cannot run fail before any
rank starts."""
import math

import pytest
import torch

from commlab import data
from commlab.train import Trainer

SCHEDULES = ["wfbp", "fusion(mb=0.002, first_mb=0.001)", "mg_wfbp",
             "bytescheduler(partition_mb=0.001, credit_mb=0.002)", "p3(slice_kb=0.5)"]


from scheduled_fixtures import digits, one_thread  # noqa: E402,F401  (pytest fixtures)


def _run(ds, steps=4, **kw):
    kw = {"model": "mlp", "data": ds, "workers": 3, "progress": False, "momentum": 0.9, "weight_decay": 1e-3,
          "batch_size": 16, "model_kw": {"hidden": [16] * 4}, **kw}
    return Trainer(**kw).fit(steps)


# ----------------------------------------------------------------------------- same math
@pytest.mark.parametrize("arch", ["native", "ps", "ps(shards=2)"])
def test_every_schedule_is_bit_identical(digits, arch):
    base = _run(digits, arch=arch)
    assert all(math.isfinite(v) for v in base.loss)
    for spec in SCHEDULES:
        h = _run(digits, arch=arch, schedule=spec)
        assert h.loss == base.loss, spec
        assert h.test_accuracy[-1] == base.test_accuracy[-1], spec  # the final model too
        assert len(h.timeline) == 4 * len({r["message"] for r in h.timeline})


def test_transformer_is_bit_identical():
    """A transformer's layers hold parameters out of flat order (norm1 after linear2 in
    parameters(), attention's out_proj owned by the attention layer): messages carry scattered
    ranges of the flat vector, over an all-reduce and over sharded servers."""
    ds = data.load("tokens")
    for arch in ("native", "ps(shards=2)"):
        kw = dict(model="transformer", data=ds, workers=2, arch=arch, progress=False, momentum=0.9, batch_size=16)
        base = Trainer(**kw).fit(3)
        for spec in ("wfbp", "p3(slice_kb=2)", "bytescheduler(partition_mb=0.003, credit_mb=0.01)"):
            h = Trainer(schedule=spec, **kw).fit(3)
            assert h.loss == base.loss and h.test_accuracy[-1] == base.test_accuracy[-1], (arch, spec)


@pytest.mark.parametrize("arch", ["ring", "tree", "halving_doubling"])
def test_every_schedule_matches_over_other_all_reduces(digits, arch):
    base = _run(digits, arch=arch)
    for spec in SCHEDULES:
        h = _run(digits, arch=arch, schedule=spec)
        assert h.loss == pytest.approx(base.loss, abs=1e-6, rel=1e-6), spec
        assert h.test_accuracy[-1] == pytest.approx(base.test_accuracy[-1], abs=1e-6)


# ----------------------------------------------------------------------------- compression
@pytest.mark.parametrize("compress", ["fp16", "topk(0.1)+ef", "powersgd(rank=1)"])
def test_scheduled_compressed_runs_train_and_are_deterministic(digits, compress):
    cutting = () if compress.startswith("powersgd") else ("p3(slice_kb=2)",)  # refused: see the last test
    for spec in ("fusion(mb=0.002, first_mb=0.001)", *cutting):
        kw = dict(steps=10, workers=2, arch="ring", compress=compress, schedule=spec, net="10GbE", momentum=0.0, lr=0.5,
                  batch_size=32, model_kw={"hidden": [32] * 2})
        a, b = _run(digits, **kw), _run(digits, **kw)
        assert all(math.isfinite(v) for v in a.loss), (compress, spec)
        assert a.same_as(b) and a.loss == b.loss and a.sim_time == b.sim_time, (compress, spec)
        assert sum(a.loss[-3:]) < sum(a.loss[:3]) - 0.01, (compress, spec)  # it learns


def test_powersgd_keeps_its_matrices_in_whole_layer_messages(digits):
    # PowerSGD compresses a gradient in its matrix shape: a message of whole layers hands it the
    # shapes, so the run is the unscheduled one (same factors, same bytes)
    kw = dict(arch="native", compress="powersgd(rank=1)", net="10GbE", momentum=0.0)
    base = _run(digits, **kw)
    for spec in ("wfbp", "fusion(mb=0.002, first_mb=0.001)", "mg_wfbp"):
        h = _run(digits, schedule=spec, **kw)
        assert h.loss == base.loss, spec
        assert h.bytes_sent == base.bytes_sent, spec


# ----------------------------------------------------------------------------- bytes
@pytest.mark.parametrize("arch", ["native", "ps", "ps(shards=2)"])
def test_bytes_per_step_equal_the_unscheduled_run(digits, arch):
    # 4 workers: the native all-reduce's 2 (N-1)/N n bytes are whole for every message
    base = _run(digits, arch=arch, workers=4, net="10GbE")
    for spec in SCHEDULES:
        h = _run(digits, arch=arch, workers=4, schedule=spec, net="10GbE")
        assert h.bytes_sent == base.bytes_sent and h.bytes_recv == base.bytes_recv, spec
        assert h.server_bytes_sent == base.server_bytes_sent, spec
        assert h.server_bytes_recv == base.server_bytes_recv, spec


def test_ring_bytes_per_step(digits):
    """A ring over k buckets sends 2 (N-1)/N of each bucket: the same bytes in all, but each
    bucket is cut into N chunks of whole elements, so which rank sends the larger chunks moves
    with the buckets. Summed over ranks a step's bytes are exactly the unscheduled ones; per rank
    they differ by at most the rounding of 2 (N-1) chunks per message."""
    N = 3
    base = _run(digits, arch="ring", net="10GbE")
    for spec in SCHEDULES:
        tr_kw = dict(arch="ring", net="10GbE", schedule=spec)
        h = _run(digits, **tr_kw)
        messages = len({r["message"] for r in h.timeline})
        for step in range(4):
            assert sum(h.bytes_sent[step]) == sum(base.bytes_sent[step]), spec
            for r in range(N):
                assert abs(h.bytes_sent[step][r] - base.bytes_sent[step][r]) <= 2 * (N - 1) * 4 * (messages + 1)


# ----------------------------------------------------------------------------- Gloo
def test_gloo_gives_the_threads_losses(digits):
    for arch, spec in (("native", "wfbp"), ("ring", "bytescheduler(partition_mb=0.001, credit_mb=0.002)"),
                       ("ps", "p3(slice_kb=0.5)")):
        threads = _run(digits, steps=3, workers=2, arch=arch, schedule=spec)
        gloo = _run(digits, steps=3, workers=2, arch=arch, schedule=spec, runtime="gloo")
        assert gloo.loss == threads.loss, (arch, spec)
        assert gloo.bytes_sent == threads.bytes_sent, (arch, spec)
        assert len(gloo.timeline) == len(threads.timeline)


# ----------------------------------------------------------------------------- refused early
@pytest.mark.parametrize("sync", ["local_sgd(period=2)", "hogwild", "asp", "ssp", "ssp(staleness=3)", "backup",
                                  "round_robin", "fedavg"])
def test_schedule_needs_a_synchronous_step(sync):
    with pytest.raises(ValueError) as info:
        Trainer(sync=sync, schedule="wfbp", progress=False)
    msg = str(info.value)
    assert f"sync={sync!r}" in msg and "valid with a schedule: sync=bsp" in msg
    assert "asp" not in msg.split("valid with a schedule:")[1]  # the server policies are not offered


@pytest.mark.parametrize("kw", [dict(arch="ps", compress="fp16"), dict(arch="ps", reply_compress="fp16"),
                                dict(arch="ps(shards=2, colocated=True)"), dict(arch="ps(shards=2)", compress="qsgd")])
def test_schedule_over_a_server_refuses_compression_and_colocation(kw):
    with pytest.raises(ValueError) as info:
        Trainer(schedule="p3", progress=False, **kw)
    msg = str(info.value)
    assert "schedule='p3'" in msg and f"arch={kw['arch']!r}" in msg
    assert "all-reduce arch" in msg or "valid with a schedule: arch=" in msg


@pytest.mark.parametrize("spec, words", [("wfbq", ["'wfbq'", "wfbp", "mg_wfbp"]), ("fusion(mb=0)", ["mb=0"]),
                                         (7, ["7"])])
def test_bad_schedule_fails_in_the_constructor(spec, words):
    with pytest.raises((ValueError, TypeError)) as info:
        Trainer(schedule=spec, progress=False)
    assert all(w in str(info.value) for w in words)


def test_powersgd_refuses_a_schedule_that_cuts_weights():
    """PowerSGD compresses whole matrices: a piece of a weight would go uncompressed, so refuse."""
    with pytest.raises(ValueError, match=r"compress='powersgd\(rank=1\)'.*schedule='p3\(slice_kb=1\)' cuts weights"):
        Trainer(compress="powersgd(rank=1)", schedule="p3(slice_kb=1)", progress=False)
    Trainer(compress="powersgd(rank=1)", schedule="mg_wfbp", progress=False)  # whole layers: fine
