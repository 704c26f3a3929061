"""commlab.sim.cost_table and ``sim.iteration(..., compress_costs=)``: a measured table's seconds
at the sizes it measured, interpolated in log-log between them, floored below and proportional
above; an error-feedback chain timed as its inner compressor and said so; an all-gather decodes
every payload; a slow implementation turns a verdict; bad tables are refused with the reason."""
import json

import pytest

from commlab import sim
from commlab.sim.cost_table import CostTable

TABLE = {"about": {"device": "a test GPU"},
         "compressors": {"topk": {"numel": [1e3, 1e5], "encode_s": [1e-4, 1e-2], "decode_s": [1e-5, 1e-3]},
                         "fp16": {"numel": [1e3, 1e6], "encode_s": [1e-5, 1e-4], "decode_s": [1e-5, 1e-4]}}}


def test_seconds_between_below_and_above_the_sizes_measured():
    t = CostTable(TABLE)
    assert t.seconds("topk", 1e3) == (1e-4, 1e-5)
    assert t.seconds("topk", 10) == (1e-4, 1e-5)                  # below: the floor
    assert t.seconds("topk", 1e4) == pytest.approx((1e-3, 1e-4))  # log-log: halfway in both
    assert t.seconds("topk", 1e6) == pytest.approx((1e-1, 1e-2))  # above: in proportion
    assert t.entry("topk+ef") == ("topk", "'topk+ef' timed as the table's 'topk' (the residual's work is not in the table)")
    with pytest.raises(ValueError, match="has no 'qsgd'; it has fp16, topk"):
        t.entry("qsgd")


def test_an_all_gather_decodes_every_payload_and_the_source_is_stated():
    timer = CostTable(TABLE).timer()
    from commlab import compress

    encode, decode = timer(compress.get("topk(0.01)"), (1000,), 8)
    assert (encode, decode) == (1e-4, 8e-5)
    assert timer(compress.get("fp16"), (1000,), 8) == (1e-5, 1e-5)  # summed in the all-reduce: decoded once
    assert timer.source.startswith("measured (a cost table: a test GPU")


def test_a_slow_implementation_turns_the_verdict(tmp_path):
    cluster = sim.Cluster(8, 1, inter="tcp-1GbE")
    none = sim.iteration("resnet50", cluster, framework="horovod")
    fast = sim.iteration("resnet50", cluster, framework="horovod", compress="topk(0.01)")
    slow_table = {"compressors": {"topk": {"numel": [1e3, 1e7], "encode_s": [1e-2, 10.0], "decode_s": [1e-3, 1.0]}}}
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(slow_table))
    slow = sim.iteration("resnet50", cluster, framework="horovod", compress="topk(0.01)", compress_costs=str(path))
    assert fast.time < none.time < slow.time
    assert slow.compression.costs_from.startswith(f"measured ({path}")
    assert fast.compression.costs_from.startswith("declared by each compressor, timed on rtx2080ti")


@pytest.mark.parametrize("bad, says", [
    ({}, "a cost table is"),
    ({"compressors": {"topk": {"numel": [2, 1], "encode_s": [1, 1], "decode_s": [1, 1]}}}, "numel must rise"),
    ({"compressors": {"topk": {"numel": [1], "encode_s": ["x"], "decode_s": [1]}}}, "lists of numbers"),
])
def test_bad_tables_are_refused(bad, says):
    with pytest.raises(ValueError, match=says):
        CostTable(bad)
    with pytest.raises(ValueError, match="no such file"):
        CostTable.load("missing.json")
    with pytest.raises(ValueError, match="give compress= too"):
        sim.iteration("resnet50", sim.Cluster(2, 1), compress_costs=TABLE)
