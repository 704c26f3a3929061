"""The interactive speedup panel builds headless."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from commlab import widgets  # noqa: E402

w = pytest.importorskip("ipywidgets")

MODELS = {"ResNet-50": (25_600_000, 24.5e9), "BERT-Large": (336_000_000, 336e6 * 248)}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_speedup_explorer_headless():
    ui = widgets.speedup_explorer(MODELS, global_batch=512, link="100GbIB", flops=2e13)
    assert isinstance(ui, w.interactive)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["models"] == tuple(MODELS)
    assert values["global batch"] == 512
    assert values["network"] == "100GbIB"
    assert values["TFLOP/s"] == pytest.approx(20)
    # moving a control redraws: a new figure with the chosen models (plus the ideal line)
    slider = next(c for c in ui.children if getattr(c, "description", "") == "global batch")
    models = next(c for c in ui.children if getattr(c, "description", "") == "models")
    before = len(plt.get_fignums())
    slider.value = 1024
    assert len(plt.get_fignums()) == before + 1
    models.value = ("BERT-Large",)
    assert len(plt.get_fignums()) == before + 2
    lines = plt.gcf().axes[0].get_lines()
    assert [l.get_label() for l in lines] == ["BERT-Large", "ideal"]
    assert "global batch 1024" in plt.gcf().axes[0].get_title()


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_ps_explorer_headless():
    ui = widgets.ps_explorer(nbytes=440e6, link="100GbIB", servers=16, max_workers=256)
    assert isinstance(ui, w.interactive)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["gradient MB"] == pytest.approx(440)
    assert values["network"] == "100GbIB" and values["servers S"] == 16 and values["max workers"] == 256
    ax = plt.gcf().axes[0]
    assert [l.get_label() for l in ax.get_lines()] == ["ring all-reduce", "PS, S = 1", "PS, S = 16", "PS, S = N"]
    assert list(ax.get_lines()[0].get_xdata()) == [2, 4, 8, 16, 32, 64, 128, 256]
    # one server: no duplicate line; a new figure on every change
    shards = next(c for c in ui.children if getattr(c, "description", "") == "servers S")
    before = len(plt.get_fignums())
    shards.value = 1
    assert len(plt.get_fignums()) == before + 1
    assert [l.get_label() for l in plt.gcf().axes[0].get_lines()] == ["ring all-reduce", "PS, S = 1", "PS, S = N"]


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_allreduce_explorer_headless():
    ui = widgets.allreduce_explorer(nbytes=4e6, p=16, link="100GbIB", group_size=4)
    assert isinstance(ui, w.interactive)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["message MB"] == pytest.approx(4)
    assert values["ranks N"] == 16 and values["network"] == "100GbIB" and values["ranks/node"] == 4
    bars, curves = plt.gcf().axes
    assert len(bars.patches) == 6 and "4 MB on N = 16" in bars.get_title()
    assert [l.get_label() for l in curves.get_lines()][:5] == ["naive", "ring", "tree", "double_tree",
                                                                "halving_doubling"]
    ranks = next(c for c in ui.children if getattr(c, "description", "") == "ranks N")
    before = len(plt.get_fignums())
    ranks.value = 8
    assert len(plt.get_fignums()) == before + 1
    assert "N = 8" in plt.gcf().axes[1].get_title()


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_compression_explorer_headless():
    import torch

    x = torch.randn(32, 16, generator=torch.Generator().manual_seed(0))
    ui = widgets.compression_explorer(x, family="topk", value=0.03)
    assert isinstance(ui, w.interactive)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["compressor"] == "topk" and values["ratio"] == 0.03
    assert "topk, ratio = 0.03" in plt.gcf().axes[0].get_title()
    family = next(c for c in ui.children if getattr(c, "description", "") == "compressor")
    before = len(plt.get_fignums())
    family.value = "powersgd"        # its own parameter and sweep, and a new figure
    param = next(c for c in ui.children if getattr(c, "description", "") == "rank")
    assert list(param.options) == [1, 2, 4, 8, 16] and param.value == 1
    assert len(plt.get_fignums()) > before
    assert "powersgd, rank = 1" in plt.gcf().axes[0].get_title()
    param.value = 4
    assert "powersgd, rank = 4" in plt.gcf().axes[0].get_title()


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_quantizer_explorer_headless():
    import torch

    x = torch.randn(600, generator=torch.Generator().manual_seed(0))
    ui = widgets.quantizer_explorer(x, quantizer="qsgd", levels=4, draws=5)
    assert isinstance(ui, w.interactive)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["quantizer"] == "qsgd" and values["levels s"] == 4 and values["draws"] == 5
    ax = plt.gcf().axes[0]
    assert ax.get_title().startswith("qsgd(levels=4): ") and "looks unbiased" in ax.get_title()
    assert sum(p.get_height() for p in ax.patches) == 5 * 600   # every error of every draw is counted
    name = next(c for c in ui.children if getattr(c, "description", "") == "quantizer")
    before = len(plt.get_fignums())
    name.value = "scaled_sign"                                  # a biased, deterministic one: a new figure
    assert len(plt.get_fignums()) == before + 1
    assert plt.gcf().axes[0].get_title().startswith("scaled_sign: ") and "looks biased" in plt.gcf().axes[0].get_title()
    levels = next(c for c in ui.children if getattr(c, "description", "") == "levels s")
    name.value = "rotated"
    levels.value = 16
    assert plt.gcf().axes[0].get_title().startswith("rotated(levels=16): ")
