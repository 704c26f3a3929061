"""Chapter 10's helpers: runs and tables that equal their formulas, the figures and the widget, headless."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from commlab.chapters import ch10  # noqa: E402
from commlab.parallel import planner  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_zero_runs_equal_bsp_and_their_bytes_the_formula():
    _, table = ch10.zero_runs(workers=2, steps=3)
    assert (table["max |loss - BSP|"] < 1e-6).all() and (table["bytes/rank/step"] == table["formula"]).all()


def test_zero_memory_table_is_the_formula():
    table = ch10.zero_memory_table(workers=2)
    assert (table["fp32 measured"] == table["fp32 formula"]).all()
    assert (table["mixed measured"][1:] == table["mixed formula"][1:]).all()
    assert table["fp32 measured"].is_monotonic_decreasing


def test_figure_1_rounds_to_the_paper():
    t = ch10.figure_1_table()
    assert (t["ours (GB)"].round(1) == t["paper (GB)"]).all()


def test_tp_table_and_link_table():
    t = ch10.tp_table(sizes=(2,))
    assert (t["bytes/rank"] == t["formula"]).all() and (t["max |error|"] < 1e-5).all()
    links = ch10.tp_link_table()
    assert links["comm / compute"].is_monotonic_increasing  # NVLink, IB, slower IB, Ethernet


def test_bubbles_and_timeline_figure():
    b = ch10.bubble_table(p=3, ms=(1, 3))
    assert (abs(b["measured, 1F1B"] - b["(p-1)/(m+p-1)"]) < 1e-9).all()
    axes = ch10.timeline_figure({"GPipe": ch10.pipeline_timeline("gpipe", 3, 3)})
    assert len(axes[0].collections) == 2 * 3 * 3  # one box per op


def test_moe_table_bytes():
    t = ch10.moe_table(world=2, experts=4, factors=(1.0,))
    assert (t["bytes/rank"] == t["formula"]).all()


def test_megatron_table_and_plan_figure():
    t = ch10.megatron_table()
    assert list(t.index) == ["gpt-145b", "gpt3-175b", "gpt-1t"]
    axes = ch10.plan_figure(planner.plan("gpt3-175b", 64, 8, 8, 1, batch=64))
    assert len(axes) == 2 and axes[0].patches


def test_layout_explorer_draws_its_default(monkeypatch):
    ui = ch10.layout_explorer()
    assert ui is not None


def test_layouts_shown_is_the_planner_rows_narrowed():
    layouts = planner.candidates("gpt3-175b", 64, batch=64).head(5)
    shown = ch10.layouts_shown(layouts)
    assert list(shown.columns) == ["ZeRO", "m", "GB/GPU", "s/step", "TFLOP/s/GPU"] and len(shown) == 5
    for k, label in enumerate(shown.index):  # each row, planned again from its label, is the planner's
        tp, pp, dp = map(int, label.split("×"))
        again = planner.plan("gpt3-175b", 64, tp, pp, dp, int(shown.ZeRO.iloc[k]), batch=64).row()
        assert again["m"] == shown.m.iloc[k] and round(again["step_s"], 3) == shown["s/step"].iloc[k]
        assert round(again["memory_gb"], 1) == shown["GB/GPU"].iloc[k]
        assert round(again["tflops_per_gpu"], 1) == shown["TFLOP/s/GPU"].iloc[k]
