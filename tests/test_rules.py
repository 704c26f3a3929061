"""The rulebook decides every combination from declarations: a toy component with declarations and
no name is judged like a built-in one; the declarations are honest (they agree with what the code
does); the page that shows the tables is the tables; and no module outside the rulebook tests an
option by its name."""
import pathlib
import re

import pytest

from commlab import Trainer, compress, rules, sync
from commlab.arch import aggregate
from commlab.arch.base import Architecture
from commlab.compress.base import Compressor
from commlab.config import Config
from commlab.sync.base import Synchronizer

ROOT = pathlib.Path(__file__).resolve().parents[1]


class AveragesOnly(Synchronizer):
    name = "averages_only"
    needs = frozenset({"average"})


class StepsOnly(Architecture):
    name = "steps_only"
    provides = frozenset({"step"})
    decodes = "each"


def test_a_toy_synchronizer_and_architecture_are_judged_by_what_they_declare():
    c = Config(sync="bsp", arch="ring")
    with pytest.raises(ValueError, match=r"sync='bsp' averages models, which arch='ring' does not offer; "
                                         r"valid: arch=.*native.*ring.*switchml"):
        rules.check(c, AveragesOnly(), StepsOnly())
    rules.check(c, sync.get("bsp"), StepsOnly())  # needs {"step"}: runs
    k = rules.Combination(Config(compress="powersgd"), sync.get("bsp"), StepsOnly(), compress.get("powersgd"))
    assert "own all-reduce protocol (powersgd)" in rules.conflict(k)  # decoded each alone: no protocol
    k = rules.Combination(Config(compress="qsgd"), sync.get("bsp"), StepsOnly(), compress.get("qsgd"))
    assert rules.conflict(k) is None


class Toy(Compressor):
    name, aggregation, protocol = "toy", "gather", "toy_protocol"


def test_a_toy_compressor_with_a_protocol_of_its_own_runs_only_where_payloads_meet():
    aggregate.register_protocol("toy_protocol", lambda comm, c, tensors, keys, algorithm, kw: tensors)
    try:
        for receiver, runs in (("together", True), ("each", False), ("weighted", False), ("none", False)):
            assert (rules._decoding_conflict(receiver, Toy()) is None) == runs, receiver
        assert "own all-reduce protocol (toy_protocol)" in rules._decoding_conflict("each", Toy())
    finally:
        del aggregate.PROTOCOLS["toy_protocol"]


@pytest.mark.parametrize("name", compress.COMPRESSORS.names())
def test_compressor_declarations_agree_with_the_code(name):
    c = compress.get(name)
    assert c.keeps_round_state == (type(c.base).combine is not Compressor.combine)
    assert c.applies_momentum == (name == "dgc") and c.whole_tensors == (name in ("powersgd", "atomo"))
    assert c.base is (c if c.inner is None else c.inner.base) and c.remembers_error == (c.inner is not None)
    if c.inner is None and c.no_error_feedback is None:
        wrapped = compress.get(f"{name}+ef")
        assert wrapped.remembers_error and type(wrapped.base) is type(c)


@pytest.mark.parametrize("kw, message", [
    (dict(sync="bsp", arch="ps(shards=2)", compress="diana"), None),
    (dict(sync="asp", compress="diana"), r"keeps per-round state .* \(sync='bsp'\); valid: compress=.*qsgd"),
    (dict(sync="ssp(staleness=1)", arch="ps(shards=2)"), r"runs on a single server shard; got shards=2"),
    (dict(compress="dgc", momentum=0.9), r"compress='dgc' applies momentum itself"),
    (dict(compress="topk(0.01)+ef", momentum=0.9), None),
    (dict(arch="ps", reply_compress="topk(0.1)+ef"), r"carry their error feedback already"),
    (dict(arch="ring", reply_compress="fp16"), r"arch='ring' has none; valid: arch=ps"),
    (dict(sync="fedavg", arch="ring"), r"sync='fedavg' talks over its ranks itself and takes no arch"),
    (dict(sync="local_sgd(period=2)", schedule="wfbp"), r"sync='local_sgd\(period=2\)' cannot use it; valid with a "
                                                        r"schedule: sync=bsp, dynamic_batch$"),
    (dict(arch="ps(colocated=True)", compress="fp16"), r"over arch='ps\(colocated=True\)': carries no compression"),
    (dict(arch="ring", compress="fp16", compress_per="tensor"), None),
    (dict(sync="local_sgd(period=2)", compress="qsgd", compress_per="tensor"), None),
    (dict(sync="fedavg", compress="qsgd", compress_per="tensor"), None),
    (dict(arch="ring", compress_per="tensor"), r"^compress_per='tensor' cuts compressed gradients into messages, but "
                                                r"compress=None sends the fused buffer uncompressed; valid: "
                                                r"compress_per='bucket' \(the default\), or a compressor$"),
    (dict(arch="ps(shards=2)", compress="qsgd", compress_per="tensor"),
     r"^compress_per='tensor': arch='ps\(shards=2\)' compresses its fused buffer's pieces \(compress_per='bucket'\); "
     r"valid with compress_per='tensor': arch=double_tree, .*native, ring, tree$"),
    (dict(sync="dcd_psgd", compress="qsgd", compress_per="tensor"), r"arch='gossip' compresses its fused buffer's"),
])
def test_each_rule_names_the_conflict_and_what_is_valid(kw, message):
    if message is None:
        Trainer(workers=4, progress=False, **kw)
    else:
        with pytest.raises(ValueError, match=message):
            Trainer(workers=4, progress=False, **kw)


def test_dynamic_batch_runs_over_zero_as_over_a_ring_because_both_offer_a_step():
    # once forbidden by a name test (ZeRO allowed sync='bsp' only); its declaration needs a step only
    kw = dict(sync="dynamic_batch(growth=1.5)", workers=2, progress=False, eval_every=5)
    ring, zero = Trainer(arch="ring", **kw).fit(4), Trainer(arch="zero(stage=2)", **kw).fit(4)
    assert zero.loss == ring.loss


def test_the_architecture_page_shows_the_tables_the_declarations_draw():
    page = (ROOT / "docs" / "architecture.md").read_text()
    shown = page.split("<!-- rules:begin -->\n")[1].split("<!-- rules:end -->")[0]
    assert shown == rules.markdown()
    assert "| `bsp` | yes C S | yes C S | yes | yes | yes | - |" in shown  # spot check of the drawing


NAME_TESTS = [
    r'"[a-z_]+" in [a-z_.]*\bname\b',  # "dgc" in compressor.name
    r'getattr\([a-z_]+, "inner"',  # a wrapper that does not say it wraps
    r'\bprotocol\s*==\s*"',  # protocol == "powersgd"
    r'\b(config|c)\.(sync|compress|reply_compress|schedule)\s*(==|!=|in|not in)\s*[(\["]',
]


def test_no_option_is_checked_by_its_name_outside_the_rulebook():
    offenders = []
    for path in (ROOT / "commlab").rglob("*.py"):
        if "chapters" in path.parts:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if any(re.search(p, line) for p in NAME_TESTS):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []


class Unregistered(Compressor):
    name, aggregation, protocol = "unregistered", "sum", "nobody_registered_this"


def test_a_protocol_no_one_registered_is_refused_before_any_rank_starts():
    k = rules.Combination(Config(compress="qsgd"), sync.get("bsp"), rules.arch_pkg.get("ring"), Unregistered())
    assert "'nobody_registered_this', which no one registered; valid protocols: powersgd" in rules.conflict(k)
