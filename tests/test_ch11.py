"""Chapter 11's helpers: tables that equal their formulas, the real runs, the figure and the widget, headless."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from commlab.chapters import ch11  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_oversubscription_and_allreduce_tables():
    over = ch11.oversubscription_table(k=4, nbytes=10e6, ratios=(1, 2))
    assert over.loc["1:1", "vs closed form"] == pytest.approx(1, rel=1e-3)
    assert over.loc["2:1", "vs closed form"] == pytest.approx(2, rel=0.05)
    algos = ch11.allreduce_table(nodes=2, g=4, nbytes=10e6)
    assert algos.loc["rails", "rail-aware"] < algos.loc["rails", "leader"] < algos.loc["tor", "flat ring"] * 2


def test_bml_table_is_k_plus_one():
    bml = ch11.bml_table(10e6)
    assert (bml["time ratio"] - bml["1/(k+1)"]).abs().max() < 0.01
    assert list(bml["switch ratio"].round(2)) == [0.4, 0.6, 0.4]


def test_ina_tables_and_switch_run():
    ina = ch11.ina_table(workers=(4, 8), sizes=(1e6, 1e8))
    assert (ina.loc[8] > ina.loc[4]).all()
    run = ch11.switch_run(workers=3, n=2000)
    assert run["max |error|"].iloc[0] < 1e-5
    assert run["bytes sent/worker"].iloc[0] == run["wire formula"].iloc[0]


def test_switch_training_is_the_ring_training_with_the_switch_bytes():
    runs, table = ch11.switch_training(workers=3, steps=4)
    ring, switch = runs["ring"].loss, runs["switchml"].loss
    assert len(ring) == len(switch) == 4 and all(abs(a - b) <= 1e-6 * abs(a) for a, b in zip(ring, switch))
    assert (table["bytes/worker/step"] == table["formula"]).all()
    assert table.loc["ring", "bytes/worker/step"] == pytest.approx(2 * 2 / 3 * table.loc["switchml", "formula"], rel=0.02)
    assert table.loc["ring", "sim ms/step"] == pytest.approx(table.loc["ring", "closed form ms/step"], rel=1e-4)


def test_protocol_scaling_and_inference_tables():
    scaling = ch11.scaling_table(nodes=(1, 16))
    assert scaling.loc[64, "rdma-100GbIB"] > scaling.loc[64, "tcp-100GbE"] > scaling.loc[64, "tcp-10GbE"]
    ms, share = ch11.decode_table(tps=(1, 8))
    assert ms.loc[8, "NVLink3-A100"] < ms.loc[1, "NVLink3-A100"] and share.loc[1].eq(0).all()
    kv = ch11.kv_table(models=("llama2-70b",), tokens=(1024,))
    assert kv["KV cache GB"].iloc[0] == pytest.approx(327_680 * 1024 / 1e9)


def test_goodput_table_and_elastic_figure(tmp_path):
    good = ch11.goodput_table(gpus=(1024, 16384), runs=20)
    assert (good["goodput (formula)"] - good["goodput (simulated)"]).abs().max() < 0.05
    runs = {"uninterrupted": {"losses": [2.0, 1.5, 1.0], "events": []},
            "rank 2 lost": {"losses": [2.0, 1.5, 1.0], "events": [{"at_step": 1, "resumed_from": 0, "failed_rank": 2}]}}
    ax = ch11.elastic_figure(runs)
    assert len(ax.lines) == 4


def test_jobs_table_has_every_policy():
    t = ch11.jobs_table(n_jobs=20)
    assert len(t) == 9 and (t["utilization"] > 0).all() and (t["utilization"] <= 1).all()


def test_fabric_explorer_draws_its_default():
    assert ch11.fabric_explorer() is not None


def test_llama3_table_losses_and_checkpoint_for():
    from commlab.infra import faults
    t = ch11.llama3_table(costs=((120, 600), (10, 120)), runs=10)
    row = t.loc[(120, 600)]
    # the first-order goodput is (1 - checkpoints) x (1 - lost work - restarts)
    assert row["goodput (formula)"] == pytest.approx((1 - row["checkpoints"]) * (1 - row["lost work"] - row["restarts"]))
    assert t.loc[(10, 120), "goodput (formula)"] > row["goodput (formula)"]
    c = ch11.checkpoint_for(0.9, restart=600.0)
    m = faults.job_mtbf(16384)
    assert faults.goodput(faults.young_daly(c, m), c, m, 600.0) == pytest.approx(0.9, abs=1e-9)
    assert ch11.checkpoint_for(0.99, gpus=16384, restart=10 * m) == 0.0   # a restart this long never reaches it
