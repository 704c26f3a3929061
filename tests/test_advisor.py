"""commlab.advisor.advise: every row's arithmetic (time = iteration x target x penalty) and its
penalty (the ranking penalty of the measured table), the Trainer's names for each option, the wire
ratios it uses, local SGD's and gossip's iteration, the ranking turning to communication-saving
options as the network slows, large models placed by the planner (what-ifs, said per row), and the
refusals. That every row trains as printed is tests/test_advisor_runnable.py."""
import sys

import pytest

import commlab.advisor  # noqa: F401
from commlab import sim
from commlab.advisor import advise, horizon, penalties

A = sys.modules["commlab.advisor.advise"]


@pytest.fixture(scope="module")
def ranked():
    return {net: advise("resnet50", sim.Cluster(8, 4, inter=net), target=1000) for net in ("100GbIB", "1GbWAN")}


def test_rows_are_sorted_and_their_arithmetic_holds(ranked):
    t = ranked["100GbIB"]
    assert t["time_s"].is_monotonic_increasing and list(t.index) == list(range(1, len(t) + 1))
    assert (abs(t["time_s"] - t["iteration_s"] * 1000 * t["penalty"]) < 1e-9 * t["time_s"]).all()
    assert (t["hidden_s"] <= t["comm_s"] + 1e-12).all() and t["reasoning"].str.contains("penalty").all()
    used = horizon.for_ranking()
    for spec in set(t["compress"].dropna()):
        assert (t[t["compress"] == spec]["penalty"] == used.loc[spec, "penalty"]).all()
    assert (t[t["sync"] != "bsp"]["penalty"] >= 1).all() and (t[t["compress"].notna()]["penalty"] >= 1).all()
    assert set(t["arch"]) == {"ring", "ps(shards=8)", "gossip(topology='ring')"}
    assert set(t["runs"]) == {"as printed"} and (t["workers"] == 32).all()


def test_wire_ratios_are_the_librarys():
    assert A.wire_ratio("fp16") == (0.5, "sum")
    r, agg = A.wire_ratio("topk(0.01)+ef")
    assert agg == "gather" and 0.01 < r < 0.03  # 1% of the values, with their indices
    assert A.wire_ratio("signsgd+ef")[1] == "majority"


def test_local_sgd_and_gossip_iterations(ranked):
    cluster = sim.Cluster(8, 4, inter="100GbIB")
    base = sim.iteration("resnet50", cluster, arch="allreduce")
    t = ranked["100GbIB"]
    row = t[(t["sync"] == "local_sgd(period=4)") & (t["arch"] == "ring")].iloc[0]
    assert row["iteration_s"] == pytest.approx(base.single + (base.time - base.single) / 4)
    gossip = t[t["sync"] == "dpsgd"].iloc[0]
    nbytes = sum(sim.builtin("resnet50").grad_bytes)
    assert gossip["iteration_s"] == pytest.approx(base.single + 2 * cluster.inter.time(nbytes))


def test_a_slow_network_turns_the_ranking_to_saving_communication(ranked):
    fast, slow = ranked["100GbIB"].iloc[0], ranked["1GbWAN"].iloc[0]
    assert slow["sync"] != "bsp" or slow["compress"] is not None
    wan = ranked["1GbWAN"]
    plain = wan[(wan["sync"] == "bsp") & wan["compress"].isna()]["time_s"].min()
    assert slow["time_s"] < plain / 2
    assert fast["time_s"] <= ranked["100GbIB"][ranked["100GbIB"]["compress"].isna()]["time_s"].min()


def test_large_models_get_layouts_that_fit():
    t = advise("gpt3-175b", sim.Cluster(128, 8, intra="NVLink3-A100", inter="200GbHDR-IB"), target=10, batch=1536)
    assert t["parallel"].str.startswith("dp=").all() and (t["penalty"] == 1).all()
    assert t["runs"].str.startswith("what-if: gpt3-175b is too large").all()
    assert t["reasoning"].str.contains("GB per GPU").all()
    with pytest.raises(ValueError, match="gpt3-175b cannot be placed on 16 GPUs of 80 GB: the leanest layout needs"):
        advise("gpt3-175b", sim.Cluster(2, 8, intra="NVLink3-A100", inter="200GbHDR-IB"), target=10)


def test_left_out_says_why(ranked):
    left = ranked["100GbIB"].attrs["left_out"]
    assert "ssp, asp" in left
    used = horizon.for_ranking()
    for option in used[~used["reached"]].index:
        assert left[option].startswith("missed the target")


def test_refusals():
    c = sim.Cluster(2, 4)
    with pytest.raises(ValueError, match="no configuration reaches the target within budget=0.001 s; the fastest"):
        advise("resnet50", c, target=10, budget=1e-3)
    with pytest.raises(ValueError, match="target=0 must be a number of rounds"):
        advise("resnet50", c, target=0)
    with pytest.raises(ValueError, match="unknown model 'vgg'; valid: resnet50"):
        advise("vgg", c)
    with pytest.raises(ValueError, match="cluster must be a commlab.sim.Cluster"):
        advise("resnet50", "8 GPUs")


def test_compressed_rows_are_the_simulators_iteration_with_both_factors(ranked):
    """A compressor over the all-reduce is sim.iteration(..., compress=spec) on the profile's device:
    its iteration seconds (with its encode and decode) and its rounds (target x the penalty of the
    horizon it names) multiply to its time."""
    t = ranked["100GbIB"]
    rows = t[t["compress"].notna() & t["arch"].str.startswith("ring")]
    assert len(rows) > 0
    for _, row in rows.iterrows():
        sched = row["schedule"] or "none"
        it = sim.iteration("resnet50", sim.Cluster(8, 4, inter="100GbIB"), compress=row["compress"], schedule=sched)
        assert row["iteration_s"] == pytest.approx(it.time, rel=1e-12)
        assert row["arithmetic_s"] == pytest.approx(it.compression.arithmetic_s) and row["arithmetic_s"] > 0
        assert row["horizon"].startswith(("short:", "long:"))
    assert "topk(0.01)+ef" in set(rows["compress"])  # kept: it reaches the long horizon's top target


def test_no_rounding_noise_is_reported_as_hidden_time():
    from commlab.advisor.advise import _row

    compute, comm = 1.64e-3, 0.232e-3
    row = _row({}, compute, comm, compute + comm, 1.0, 10)
    assert row["hidden_s"] == 0.0 and "(0 of 0.232 ms hidden)" in row["reasoning"], row["reasoning"]
    assert _row({}, compute, comm, compute + comm / 2, 1.0, 10)["hidden_s"] == pytest.approx(comm / 2)
