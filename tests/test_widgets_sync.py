"""The synchronization panel builds headless, and its sliders redraw it."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from commlab import widgets_sync  # noqa: E402

w = pytest.importorskip("ipywidgets")


@pytest.fixture(autouse=True)
def _close_figures():
    torch.set_num_threads(1)
    yield
    plt.close("all")


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_sync_explorer_headless():
    before = len(plt.get_fignums())
    ui = widgets_sync.sync_explorer(staleness=1, slowdown=3.0, workers=3, steps=6)
    assert isinstance(ui, w.interactive)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["staleness s"] == 1 and values["slowdown"] == pytest.approx(3.0)
    # the static figure, then the interactive one drawn with the same defaults
    assert len(plt.get_fignums()) == before + 2
    fig = plt.gcf()
    assert len(fig.axes) == 3 and "rank 2 x3" in fig._suptitle.get_text()
    labels = [l.get_label() for l in fig.axes[0].get_lines()]
    assert labels == ["bsp", "ssp(staleness=1)", "asp", "backup(backups=1)"]
    # moving a slider redraws with the new staleness bound and slowdown
    s = next(c for c in ui.children if getattr(c, "description", "") == "staleness s")
    factor = next(c for c in ui.children if getattr(c, "description", "") == "slowdown")
    s.value = 4
    assert [l.get_label() for l in plt.gcf().axes[0].get_lines()][1] == "ssp(staleness=4)"
    factor.value = 6.0
    assert "rank 2 x6" in plt.gcf()._suptitle.get_text()
    assert len(plt.get_fignums()) == before + 4
