"""Figures of the compression chapters: right markers, bars and numbers, drawn headless."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from commlab import compress  # noqa: E402
from commlab.chapters import ch07 as pc  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_family():
    assert pc.family(None) == "none" and pc.family("none") == "none"
    assert pc.family("topk(0.01)+ef") == "sparsification"
    assert pc.family("powersgd(rank=2)") == "low rank"
    assert pc.family("qsgd(levels=4)") == "quantization"
    assert set(pc.FAMILY) == set(compress.COMPRESSORS.names())  # every registered compressor has a family
    with pytest.raises(ValueError, match="unknown compressor"):
        pc.family("zip")


def test_frontier_figure():
    points = [dict(label="uncompressed", bytes=1e7, accuracy=0.93, family="none"),
              dict(label="topk+ef", bytes=1e5, accuracy=0.92, family="sparsification"),
              dict(label="qsgd", bytes=5e6, accuracy=0.93, family="quantization"),
              dict(label="powersgd", bytes=2e5, accuracy=0.91, family="low rank")]
    ax = pc.frontier_figure(points, title="setup")
    assert ax.get_xscale() == "log" and ax.get_title() == "setup"
    offsets = [c.get_offsets()[0].tolist() for c in ax.collections]
    assert sorted(offsets) == sorted([[p["bytes"], p["accuracy"]] for p in points])
    assert sorted(t.get_text() for t in ax.texts) == sorted(p["label"] for p in points)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(legend) == ["low rank", "quantization", "sparsification", "uncompressed"]
    # the reference draws a dashed line at its accuracy and a dotted one at its bytes
    ys = [l.get_ydata()[0] for l in ax.get_lines() if l.get_linestyle() == "--"]
    assert ys == [0.93]
    assert ax.xaxis.get_major_formatter()(1e6, 0) == "1 MB"


def test_frontier_figure_merges_equal_points():
    points = [dict(label="fp16", bytes=3e6, accuracy=0.9, family="quantization"),
              dict(label="bf16", bytes=3e6, accuracy=0.9, family="quantization"),
              dict(label="none", bytes=6e6, accuracy=0.9, family="none")]
    ax = pc.frontier_figure(points)
    assert len(ax.collections) == 2
    assert sorted(t.get_text() for t in ax.texts) == ["fp16, bf16", "none"]
    assert {t.xy[1] for t in ax.texts} == {0.9}


def test_frontier_labels_do_not_overlap():
    # four runs close together: every label gets a place of its own
    points = [dict(label=f"compressor{i}", bytes=1e6 * (1 + 0.05 * i), accuracy=0.9 + 0.001 * i,
                   family="quantization") for i in range(4)]
    ax = pc.frontier_figure(points)
    ax.figure.canvas.draw()
    boxes = [t.get_window_extent() for t in ax.texts]
    assert len(boxes) == 4
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_time_to_accuracy_figure():
    rows = {"uncompressed": (1.0, 0.0, 3.0), "topk": (1.5, 0.5, 0.5), "never": None}
    ax = pc.time_to_accuracy_figure(rows, title="link")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["topk", "uncompressed", "never"]  # fastest first
    widths = [p.get_width() for p in ax.patches]
    assert widths[:3] == [1.5, 0.5, 0.5] and widths[3:6] == [1.0, 0.0, 3.0] and widths[6:] == [0.0] * 3
    assert [p.get_x() for p in ax.patches][:3] == [0.0, 1.5, 2.0]  # stacked
    notes = [t.get_text() for t in ax.texts]
    assert notes[-1] == "target not reached" and notes[0].strip() == "2.5 s"
    assert ax.get_title() == "link"
    bold = [t.get_text() for t in ax.get_yticklabels() if t.get_fontweight() == "bold"]
    assert bold == ["uncompressed"]


def test_time_to_accuracy_figure_cut():
    rows = {"uncompressed": (1.0, 0.0, 3.0), "slow": (1.0, 20.0, 1.0)}
    ax = pc.time_to_accuracy_figure(rows, xmax=8.0)
    widths = [p.get_width() for p in ax.patches]
    assert widths == [1.0, 0.0, 3.0, 1.0, 7.0, 0.0]            # the slow bar stops at 8 s
    assert [t.get_text() for t in ax.texts] == [" 4 s", " 22 s >"]
    assert ax.get_xlim() == (0.0, 10.0) and "cut at 8 s" in ax.get_xlabel()
    ax = pc.time_to_accuracy_figure(rows, xmax=100.0)          # nothing to cut
    assert ax.get_xlim() == (0.0, 27.5) and "cut" not in ax.get_xlabel()


def test_reconstruct_and_tradeoff():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 32, generator=g)
    y, nbytes = pc.reconstruct(x, "topk", 0.1)
    assert int((y != 0).sum()) == round(0.1 * x.numel())
    assert nbytes == compress.get("topk(0.1)").wire_bytes(x.shape)
    assert pc.relative_error(x, y) <= 1 - 0.1
    # a rank-2 matrix: PowerSGD of rank 2 recovers it
    m = torch.randn(64, 2, generator=g) @ torch.randn(2, 32, generator=g)
    y, _ = pc.reconstruct(m, "powersgd", 2)
    assert pc.relative_error(m, y) < 1e-10
    pts = pc.tradeoff(x, "topk")
    assert [v for v, _, _ in pts] == list(pc.TRADEOFF["topk"][1])
    errors = [e for _, _, e in pts]
    assert errors == sorted(errors, reverse=True)  # more coordinates, less error
    with pytest.raises(ValueError, match="unknown family"):
        pc.reconstruct(x, "zip", 1)


def test_tradeoff_figure():
    x = torch.randn(32, 16, generator=torch.Generator().manual_seed(1))
    left, orig, rec = pc.tradeoff_figure(x, "powersgd", 2)
    assert left.get_xscale() == "log" and left.get_yscale() == "log"
    assert [l.get_label() for l in left.get_lines()][:len(pc.TRADEOFF)] == list(pc.TRADEOFF)
    assert "powersgd, rank = 2" in left.get_title()
    assert left.figure._suptitle.get_text().startswith("One compression of x (32 x 16, fp32)")
    assert orig.images[0].get_array().shape == (32, 16) and rec.images[0].get_array().shape == (32, 16)
    assert math.isclose(float(orig.images[0].get_array().max()), float(x.max()), rel_tol=1e-6)


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_compression_explorer_headless():
    w = pytest.importorskip("ipywidgets")
    x = torch.randn(32, 16, generator=torch.Generator().manual_seed(0))
    ui = pc.compression_explorer(x, family="topk", value=0.03)
    assert isinstance(ui, w.VBox)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["compressor"] == "topk" and values["ratio"] == 0.03
    assert "topk, ratio = 0.03" in ui.shown.axes[0].get_title()
    family = next(c for c in ui.children if getattr(c, "description", "") == "compressor")
    before = len(plt.get_fignums())
    family.value = "powersgd"        # its own parameter and sweep, redrawn in place
    param = next(c for c in ui.children if getattr(c, "description", "") == "rank")
    assert list(param.options) == [1, 2, 4, 8, 16] and param.value == 1
    assert len(plt.get_fignums()) == before
    assert "powersgd, rank = 1" in ui.shown.axes[0].get_title()
    param.value = 4
    assert "powersgd, rank = 4" in ui.shown.axes[0].get_title()
