"""Chapter 01's figures and widget: right number of lines and bars, drawn headless."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from commlab.net import speedup  # noqa: E402
from commlab.chapters import ch01  # noqa: E402

MODELS = {"ResNet-50": (25_600_000, 24.5e9), "BERT-Base": (110_000_000, 110e6 * 249)}

MODELS_LARGE = {"ResNet-50": (25_600_000, 24.5e9), "BERT-Large": (336_000_000, 336e6 * 248)}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_speedup_figure_lines():
    ax = ch01.speedup_figure(MODELS, 256)
    assert isinstance(ax, matplotlib.axes.Axes)
    lines = ax.get_lines()
    assert len(lines) == len(MODELS) + 1  # one per model, plus the ideal line
    assert [l.get_label() for l in lines] == ["ResNet-50", "BERT-Base", "ideal"]
    assert list(lines[0].get_xdata()) == list(ch01.WORKERS)
    assert list(lines[0].get_ydata()) == pytest.approx(
        speedup.speedup_curve(*MODELS["ResNet-50"], 256, ch01.WORKERS, "10GbE", 1e13))
    assert list(lines[-1].get_ydata()) == list(ch01.WORKERS)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "10GbE" in ax.get_title()


def test_speedup_figure_on_given_axes_with_workers():
    fig, ax = plt.subplots()
    out = ch01.speedup_figure({"m": (1e6, 1e9)}, 64, link="100GbIB", workers=(1, 2, 4), ax=ax)
    assert out is ax and len(ax.get_lines()) == 2
    assert list(ax.get_lines()[0].get_xdata()) == [1, 2, 4]


def test_step_breakdown_bars():
    d, c = MODELS["ResNet-50"]
    ax = ch01.step_breakdown(d, c, 256)
    assert isinstance(ax, matplotlib.axes.Axes)
    assert len(ax.containers) == 2  # compute and communication
    assert [len(bc) for bc in ax.containers] == [len(ch01.WORKERS)] * 2
    assert len(ax.patches) == 2 * len(ch01.WORKERS)
    compute, comm = ax.containers
    for n, bc, bm in zip(ch01.WORKERS, compute, comm):
        st = speedup.step_time(d, c, 256, n, "10GbE", 1e13)
        assert bc.get_height() == pytest.approx(st.compute * 1e3)
        assert bm.get_height() == pytest.approx(st.comm * 1e3)
        assert bm.get_y() == pytest.approx(st.compute * 1e3)  # stacked on the compute bar
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(n) for n in ch01.WORKERS]


def test_step_breakdown_custom_workers():
    ax = ch01.step_breakdown(1_000_000, 1e9, 128, link="NVLink", workers=(1, 8))
    assert len(ax.patches) == 4


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_speedup_explorer_headless():
    w = pytest.importorskip("ipywidgets")
    ui = ch01.speedup_explorer(MODELS_LARGE, global_batch=512, link="100GbIB", flops=2e13)
    assert isinstance(ui, w.VBox)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["models"] == tuple(MODELS_LARGE)
    assert values["global batch"] == 512
    assert values["network"] == "100GbIB"
    assert values["TFLOP/s"] == pytest.approx(20)
    # moving a control redraws: a new figure with the chosen models (plus the ideal line)
    slider = next(c for c in ui.children if getattr(c, "description", "") == "global batch")
    models = next(c for c in ui.children if getattr(c, "description", "") == "models")
    before = len(plt.get_fignums())
    slider.value = 1024
    assert len(plt.get_fignums()) == before  # redrawn in place, and closed once shown
    models.value = ("BERT-Large",)
    assert len(plt.get_fignums()) == before  # redrawn in place, and closed once shown
    lines = ui.shown.axes[0].get_lines()
    assert [l.get_label() for l in lines] == ["BERT-Large", "ideal"]
    assert "global batch 1024" in ui.shown.axes[0].get_title()
