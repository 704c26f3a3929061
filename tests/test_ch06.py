"""Chapter 06's figures and statistics: drawn headless, numbers against closed forms."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from commlab.chapters import ch06 as pq  # noqa: E402
from commlab.compress import coding  # noqa: E402
from commlab.compress.qsgd import QSGD  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


X = torch.randn(1024, generator=torch.Generator().manual_seed(3))


def test_quantizer_spec():
    assert pq.quantizer_spec("qsgd", 8) == "qsgd(levels=8)"
    assert pq.quantizer_spec("terngrad", 8) == "terngrad"
    with pytest.raises(ValueError, match="unknown quantizer 'qsgdd'; valid: qsgd"):
        pq.quantizer_spec("qsgdd")


def test_error_stats_of_a_deterministic_quantizer_is_exact():
    st = pq.error_stats(X, "scaled_sign", draws=10)
    y = X.abs().mean() * torch.where(X < 0, -1.0, 1.0)
    want = float((y - X).double().pow(2).sum() / X.double().pow(2).sum())
    assert st.rel_error == pytest.approx(want, rel=1e-6) and st.rel_bias == pytest.approx(want, rel=1e-6)
    assert st.bias_ratio == pytest.approx(10)                      # draws x bias / error
    assert st.bits == 8 * (30 + 4 + 1024 // 8) / 1024  # a 30-byte header, the fp32 scale, the sign bits


def test_error_stats_of_an_unbiased_quantizer():
    st = pq.error_stats(X, "qsgd(levels=2, bucket=256)", draws=300)
    assert 0.7 < st.bias_ratio < 1.4                               # the mean of n draws has 1/n of the variance
    bound = QSGD(2, 256).variance_bound(X) / float(X.double().pow(2).sum())
    assert st.rel_error <= bound
    assert st.bits == pytest.approx(8 * QSGD(2, 256).compress(X).nbytes / 1024)
    with pytest.raises(ValueError, match="at least 2 draws"):
        pq.error_stats(X, "qsgd", draws=1)
    with pytest.raises(ValueError, match="nonzero"):
        pq.error_stats(torch.zeros(8), "qsgd", draws=2)


def test_variance_bits_figure():
    ax = pq.variance_bits_figure({"qsgd": [(4.0, 2.0), (2.0, 9.0)], "natural": [(9.0, 0.08)]},
                                 bound=[(2.0, 11.0), (4.0, 5.0)], title="t")
    lines = ax.get_lines()
    assert [l.get_label() for l in lines[:3]] == ["qsgd", "natural", "QSGD bound min(U/s², √U/s)"]
    assert list(lines[0].get_xdata()) == [2.0, 4.0]                # sorted by bits
    assert lines[1].get_linestyle() == "None"                      # a single point is a marker
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log" and ax.get_title() == "t"


def test_coding_figure():
    levels = (1, 4, 16)
    reports = [coding.coding_report(QSGD(s, 512, seed=0).quantize(X.clone())[1].long()) | {"fixed": coding.bits_for(s)}
               for s in levels]
    ax = pq.coding_figure(levels, reports)
    lines = ax.get_lines()
    assert len(lines) == 4 and lines[-1].get_label() == "entropy"
    assert list(lines[0].get_ydata()) == [1, 3, 5]
    assert all(h >= e - 1e-9 for h, e in zip(lines[2].get_ydata(), lines[3].get_ydata()))   # Huffman >= entropy


def test_accuracy_bytes_figure():
    runs = [{"label": "none", "bytes": 4e6, "accuracy": 0.95, "ef": False},
            {"label": "onebit", "bytes": 6e5, "accuracy": 0.90, "ef": False},
            {"label": "onebit+ef", "bytes": 6e5, "accuracy": 0.94, "ef": True},
            {"label": "terngrad", "bytes": 9e5, "accuracy": 0.95, "ef": False}]
    ax = pq.accuracy_bytes_figure(runs, title="setup")
    assert ax.get_xscale() == "log" and ax.get_title() == "setup"
    pts = ax.collections
    assert [list(c.get_offsets()[0]) for c in pts] == [[r["bytes"], r["accuracy"]] for r in runs]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["uncompressed", "onebit", "onebit+ef", "terngrad"]
    hollow, filled, other = pts[1], pts[2], pts[3]
    assert hollow.get_facecolors().size == 0 or hollow.get_facecolors()[0][3] == 0
    assert filled.get_facecolors()[0][3] == 1
    assert list(hollow.get_edgecolors()[0]) == list(filled.get_edgecolors()[0])      # one colour per compressor
    assert list(other.get_edgecolors()[0]) != list(filled.get_edgecolors()[0])


def test_error_histogram_counts_every_error():
    ax = pq.error_histogram(X, "terngrad", draws=4, bins=20)
    assert sum(p.get_height() for p in ax.patches) == 4 * 1024
    assert ax.get_title().startswith("terngrad: 1.")
    assert math.isclose(sum(1 for _ in ax.patches), 20)


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_quantizer_explorer_headless():
    w = pytest.importorskip("ipywidgets")
    x = torch.randn(600, generator=torch.Generator().manual_seed(0))
    ui = pq.quantizer_explorer(x, quantizer="qsgd", levels=4, draws=5)
    assert isinstance(ui, w.VBox)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["quantizer"] == "qsgd" and values["levels s"] == 4 and values["draws"] == 5
    ax = ui.shown.axes[0]
    assert ax.get_title().startswith("qsgd(levels=4): ") and "looks unbiased" in ax.get_title()
    assert sum(p.get_height() for p in ax.patches) == 5 * 600   # every error of every draw is counted
    name = next(c for c in ui.children if getattr(c, "description", "") == "quantizer")
    before = len(plt.get_fignums())
    name.value = "scaled_sign"                                  # a biased, deterministic one: a new figure
    assert len(plt.get_fignums()) == before  # redrawn in place, and closed once shown
    assert ui.shown.axes[0].get_title().startswith("scaled_sign: ") and "looks biased" in ui.shown.axes[0].get_title()
    levels = next(c for c in ui.children if getattr(c, "description", "") == "levels s")
    name.value = "rotated"
    levels.value = 16
    assert ui.shown.axes[0].get_title().startswith("rotated(levels=16): ")
