"""The local SGD explorer builds headless, trains what it shows, and caches its runs."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from commlab import widgets_local as wl  # noqa: E402
from commlab.train import Trainer  # noqa: E402

w = pytest.importorskip("ipywidgets")

SMALL = dict(steps=16, workers=4, lr=0.5, seed=0)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_run_settings():
    s = wl.run_settings(4, 0.1, steps=16)
    assert s["sync"] == "local_sgd(period=4)" and s["split"] == "dirichlet" and s["dirichlet_alpha"] == 0.1
    assert s["eval_every"] == 4
    assert wl.run_settings(1, None)["sync"] == "bsp" and wl.run_settings(1, None)["split"] == "iid"
    with pytest.raises(ValueError, match="multiple of the period"):
        wl.run_settings(32, 0.1, steps=48)
    with pytest.raises(ValueError, match="period must be one of"):
        wl.run_settings(3, 0.1)


def test_runs_are_cached_and_remembered():
    wl._CACHE.clear()
    h = wl.local_sgd_run(4, 1.0, **SMALL)
    assert wl.local_sgd_run(4, 1.0, **SMALL) is h and len(h.steps) == 16
    # a run made elsewhere with the same settings is taken, a different one refused
    settings = wl.run_settings(2, None, **SMALL)
    mine = Trainer(**settings).fit(steps=16)
    assert wl.remember({(2, None): mine}, **SMALL) == 1
    assert wl.local_sgd_run(2, None, **SMALL) is mine
    other = Trainer(**{**settings, "lr": 0.1}).fit(steps=16)
    with pytest.raises(ValueError, match="was not made with"):
        wl.remember({(2, None): other}, **SMALL)
    with pytest.raises(ValueError, match="was not made with"):
        wl.remember({(2, None): Trainer(**{**settings, "batch_size": 16}).fit(steps=16)}, **SMALL)


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_local_sgd_explorer_headless():
    wl._CACHE.clear()
    ui = wl.local_sgd_explorer(period=4, alpha=0.1, **SMALL)
    assert isinstance(ui, w.interactive)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["period H"] == 4 and values["Dirichlet a"] == 0.1
    left, right = plt.gcf().axes
    assert len(left.patches) == 4 * 10 and "Dirichlet split, a = 0.1" in left.get_title()
    assert [l.get_label() for l in right.get_lines()] == ["BSP (H = 1)", "local SGD, H = 4"]
    assert "final test accuracy: BSP" in right.get_title()
    # moving a control redraws (a new figure); IID and H = 1 draw one curve and balanced bars
    period = next(c for c in ui.children if getattr(c, "description", "") == "period H")
    alpha = next(c for c in ui.children if getattr(c, "description", "") == "Dirichlet a")
    before = len(plt.get_fignums())
    period.value = 1
    assert len(plt.get_fignums()) == before + 1
    alpha.value = "iid"
    left, right = plt.gcf().axes
    assert "IID split" in left.get_title()
    assert [l.get_label() for l in right.get_lines()] == ["BSP (H = 1)"]
