"""Decentralized rules through the Trainer: exact compression equals D-PSGD, the History keeps
the consensus distance and evaluates the average model, the measurement costs no bytes and no
time, threads and Gloo agree, the same seed repeats the run, bad input fails before any rank
starts, and divergence is an error naming the step and the worker."""
import math

import pytest

from commlab import Trainer
from scheduled_fixtures import one_thread  # noqa: F401  (autouse: one intra-op thread)
from commlab.history import Diverged

TOPOLOGIES = ["ring", "torus", "hypercube", "exponential", "complete", "star", "random_regular(d=3)"]


def fit(steps=12, **kw):
    kw = {"workers": 8, "lr": 0.1, "seed": 0, "eval_every": 6, "progress": False, **kw}
    return Trainer(**kw).fit(steps=steps)


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_exact_compression_equals_dpsgd(topology):
    arch = f"gossip(topology={topology.split('(')[0]!r}{', d=3' if '(' in topology else ''})"
    base = fit(sync="dpsgd", arch=arch)
    for rule in ("dcd_psgd", "ecd_psgd", "choco(gamma=1)"):
        h = fit(sync=rule, arch=arch)
        assert max(abs(a - b) for a, b in zip(h.loss, base.loss)) < 1e-6, rule
        assert max(abs(a - b) for a, b in zip(h.consensus, base.consensus)) < 1e-6, rule


def test_history_keeps_consensus_and_the_average_model():
    h = fit(sync="dpsgd", steps=12, net="10GbE")
    assert len(h.consensus) == 12 and all(c >= 0 for c in h.consensus) and h.consensus[0] > 0
    assert not math.isnan(h.test_accuracy[5]) and math.isnan(h.test_accuracy[4])
    # the measurement is off the record: bytes are the gossip's only (2 neighbours, the fp32 model)
    d = Trainer(workers=8, sync="dpsgd", progress=False).num_params
    assert all(b == 2 * 4 * d for row in h.bytes_sent for b in row)
    assert h.config["arch"] == "gossip"  # the default arch of a decentralized rule
    assert "consensus" in h.to_dataframe().columns


def test_same_seed_same_history():
    a, b = (fit(sync="choco(gamma=0.5)", compress="qsgd(levels=8)", net="1GbWAN") for _ in range(2))
    assert a.same_as(b)


def test_threads_and_gloo_agree_on_choco_with_topk():
    kw = dict(workers=4, sync="choco(gamma=0.4)", compress="topk(0.1)", steps=8, eval_every=8)
    a, b = fit(**kw), fit(runtime="gloo", **kw)
    assert max(abs(x - y) for x, y in zip(a.loss, b.loss)) < 1e-4
    assert max(abs(x - y) for x, y in zip(a.consensus, b.consensus)) < 1e-4
    assert a.bytes_sent == b.bytes_sent


@pytest.mark.parametrize("kw,message", [
    (dict(sync="choco(gamma=0)"), r"choco: gamma=0 is out of range; valid: 0 < gamma <= 1"),
    (dict(sync="choco(gamma=1.2)"), r"choco: gamma=1.2 is out of range"),
    (dict(sync="dpsgd", arch="gossip(topology='mesh')"), r"unknown topology 'mesh'; valid: ring, torus"),
    (dict(sync="dpsgd", arch="gossip(topology='torus')", workers=7), r"a 2-D torus needs n = rows x cols"),
    (dict(sync="dpsgd", arch="gossip(topology='hypercube')", workers=6), r"power of two nodes, got n=6"),
    (dict(sync="dpsgd", arch="ring"), r"sync='dpsgd' averages with neighbours only, .* valid: arch=gossip$"),
    (dict(sync="bsp", arch="gossip"), r"sync='bsp' averages each step's gradients, which arch='gossip' does not"),
    (dict(sync="dpsgd", compress="topk(0.1)"), r"sync='dpsgd' sends its values exactly, .* valid with compression: "
                                               r"sync=choco, dcd_psgd, ecd_psgd, naive_gossip$"),
    (dict(sync="choco", compress="signsgd"), r"compress='signsgd' is not a contraction .* valid: topk"),
    (dict(sync="choco", compress="topk(0.1)+ef"), r"CHOCO keeps its own memory .* drop the '\+ef'"),
    (dict(sync="dcd_psgd", compress="powersgd(rank=2)"), r"aggregates by its own all-reduce protocol"),
    (dict(sync="dpsgd", schedule="wfbp"), r"sync='dpsgd' cannot use it"),
])
def test_bad_input_fails_before_any_rank_starts(kw, message):
    with pytest.raises(ValueError, match=message):
        Trainer(workers=kw.pop("workers", 8), progress=False, **kw)


def test_a_parameter_server_refuses_a_decentralized_rule():
    with pytest.raises(ValueError, match=r"sync='dpsgd' averages with neighbours only, which arch='ps' does not "
                                         r"offer; valid: arch=gossip$"):
        Trainer(sync="dpsgd", arch="ps", progress=False)


def test_divergence_names_the_step_and_the_worker():
    with pytest.raises(Diverged, match=r"naive_gossip diverged at step \d+ on worker \d+") as info:
        fit(sync="naive_gossip", compress="qsgd(levels=1)", lr=50.0, steps=40)
    assert 1 <= info.value.step <= 40 and 0 <= info.value.worker < 8 and info.value.rule == "naive_gossip"
