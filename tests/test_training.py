"""commlab.parallel.training: 3D-parallel training equals BSP data parallelism (the oracle), its
bytes are the closed form's, Gloo agrees with threads, and bad layouts fail before a rank starts."""
import math

import pytest
import torch

from commlab.data import load
from commlab.models import build_model
from commlab.parallel.layout import Layout
from commlab.parallel.tensor import tp_bytes
from commlab.train import Trainer

KW = dict(model="transformer", data="tokens", batch_size=16, lr=0.05, momentum=0.5, weight_decay=1e-3, seed=3,
          progress=False, eval_every=4, net="10GbE")
STEPS = 8


@pytest.fixture(scope="module")
def bsp():
    """Plain BSP data parallelism over 2 workers: what every layout with dp=2 must reproduce."""
    return Trainer(workers=2, arch="ring", **KW).fit(STEPS)


@pytest.mark.parametrize("spec, workers", [
    ("dp=2,tp=2,pp=2,micro_batches=4", 8),
    ("dp=2,pp=2,micro_batches=3,schedule=gpipe", 4),
    ("dp=2,tp=2", 4),
    ("dp=2,tp=2,pp=2,micro_batches=2,sequence_parallel=1", 8),
])
def test_layouts_train_exactly_like_bsp(bsp, spec, workers):
    h = Trainer(workers=workers, parallel=spec, **KW).fit(STEPS)
    assert max(abs(a - b) for a, b in zip(bsp.loss, h.loss)) < 1e-4
    for ours, want in ((h.test_accuracy, bsp.test_accuracy), (h.test_loss, bsp.test_loss)):
        evaluated = [(a, b) for a, b in zip(ours, want) if not math.isnan(b)]
        assert len(evaluated) == STEPS // KW["eval_every"]
        assert all(abs(a - b) < 1e-4 for a, b in evaluated)


def test_bytes_per_step_are_the_closed_form():
    """tp=2, pp=2, m=4: per micro-batch of b=4 sequences, s=16 positions, h=32, each rank sends two
    all-reduces forward and two backward for its one layer, and stage 0 sends the activation
    forward, stage 1 its gradient back."""
    h = Trainer(workers=4, parallel="tp=2,pp=2,micro_batches=4", **KW).fit(2)
    layer = tp_bytes(b=4, s=16, h=32, t=2)
    boundary = 4 * 16 * 32 * 4
    want = 4 * (layer["forward"] + layer["backward"] + boundary)
    assert h.bytes_sent[-1] == [want] * 4


def test_sequence_parallel_bytes():
    """Sequence parallelism: the layers send the same bytes; the stages pass shards of s/t positions,
    entering the sequence-parallel region costs an all-gather of the gradient (first stage) and
    leaving it an all-gather of the activations (last stage), and the LayerNorms' and the row
    layers' biases' partial gradients are summed over the tp group."""
    h = Trainer(workers=4, parallel="tp=2,pp=2,micro_batches=4,sequence_parallel=1", **KW).fit(2)
    layer = tp_bytes(b=4, s=16, h=32, t=2, sequence_parallel=True)
    n = 4 * 16 * 32 * 4
    replicated = (4 * 32 + 2 * 32) * 4  # two LayerNorms, two row biases; a ring over 2 sends all of it
    want = 4 * (layer["forward"] + layer["backward"] + n / 2 + n / 2) + replicated
    assert h.bytes_sent[-1] == [want] * 4


def test_dp_replicas_add_a_ring_all_reduce_of_the_stage_shard():
    h1 = Trainer(workers=2, parallel="pp=2,micro_batches=2", **KW).fit(1)
    h2 = Trainer(workers=4, parallel="dp=2,pp=2,micro_batches=2", **KW).fit(1)
    torch.manual_seed(KW["seed"])
    full = build_model("transformer", load("tokens"))
    first = sum(p.numel() for n, p in full.named_parameters() if n.startswith(("tok", "pos", "encoder.layers.0")))
    last = sum(p.numel() for p in full.parameters()) - first
    for rank, shard in ((0, first), (2, last)):  # a ring over dp ranks sends 2 (dp-1)/dp of the shard: all of it
        assert h2.bytes_sent[0][rank] == h1.bytes_sent[0][rank // 2] + 2 * (2 - 1) / 2 * 4 * shard


def test_gloo_equals_threads():
    kw = dict(KW, batch_size=8)
    threads = Trainer(workers=4, parallel="tp=2,pp=2,micro_batches=2", **kw).fit(3)
    gloo = Trainer(workers=4, parallel="tp=2,pp=2,micro_batches=2", runtime="gloo", **kw).fit(3)
    assert max(abs(a - b) for a, b in zip(threads.loss, gloo.loss)) < 1e-5
    assert gloo.bytes_sent == threads.bytes_sent and gloo.sim_time == pytest.approx(threads.sim_time)
    single = Trainer(workers=1, **kw).fit(3)  # one process, the whole model: what dp=1 must reproduce
    assert max(abs(a - b) for a, b in zip(single.loss, gloo.loss)) < 1e-4


@pytest.mark.parametrize("kw, words", [
    (dict(parallel="dp=2,tp=2,pp=2", workers=4), ["2*2*2 = 8", "workers=4"]),
    (dict(parallel="tp=4", workers=4), ["tp=4", "2 attention heads", "valid tp: 1, 2"]),
    (dict(parallel="pp=3", workers=3), ["pp=3", "2 layers", "valid pp: 1..2"]),
    (dict(parallel="tp=2", workers=2, sync="asp"), ["sync='asp'", "'bsp'"]),
    (dict(parallel="tp=2", workers=2, compress="topk(0.1)"), ["compress='topk(0.1)'", "None"]),
    (dict(parallel="tp=2", workers=2, model="mlp", data="digits"), ["model='mlp'", "model='transformer'"]),
    (dict(parallel="tp=2,zz=1", workers=2), ["'zz=1'", "dp=..."]),
    (dict(parallel="tp=2,sequence_parallel=yes", workers=2), ["sequence_parallel='yes'", "0, 1"]),
    (dict(parallel="pp=2,micro_batches=32", workers=2), ["micro_batches=32", "batch_size=16"]),
])
def test_bad_layouts_fail_before_any_rank_starts(kw, words):
    with pytest.raises(ValueError) as e:
        Trainer(**{**KW, **kw})
    for w in words:
        assert w in str(e.value)


def test_layout_round_trips_through_the_history_config():
    h = Trainer(workers=2, parallel="tp=2", **KW).fit(1)
    assert Layout.parse(h.config["parallel"]) == Layout(tp=2)
