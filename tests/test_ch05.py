"""Chapter 05's figures and counts: drawn headless, counts against runs whose rounds are known."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from commlab import data  # noqa: E402
from commlab.chapters import ch05 as pl  # noqa: E402
from commlab.history import History  # noqa: E402
from commlab.train import Trainer  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _history(sent, acc, samples=None):
    """A History with the given bytes per step (one worker) and accuracies (NaN: not measured)."""
    n = len(sent)
    return History(steps=list(range(1, n + 1)), loss=[1.0] * n, test_accuracy=list(acc), test_loss=[0.5] * n,
                   sim_time=[math.nan] * n, wall_time=[0.0] * n, bytes_sent=[[b] for b in sent],
                   bytes_recv=[[b] for b in sent], samples=samples or [32] * n)


NAN = math.nan
H = _history([0, 0, 100, 0, 0, 100], [NAN, NAN, 0.5, NAN, NAN, 0.8])


def test_rounds_counts_steps_that_sent():
    assert pl.rounds(H).tolist() == [0, 0, 1, 1, 1, 2]
    two_workers = History(steps=[1, 2], bytes_sent=[[0, 5], [0, 0]])
    assert pl.rounds(two_workers).tolist() == [1, 1]


def test_measured_and_rounds_to_accuracy():
    m = pl.measured(H)
    assert m["step"].tolist() == [3, 6] and m["rounds"].tolist() == [1, 2]
    assert m["bytes"].tolist() == [100, 200] and m["samples"].tolist() == [96, 192]
    assert pl.rounds_to_accuracy(H, 0.5) == 1 and pl.rounds_to_accuracy(H, 0.6) == 2
    assert pl.rounds_to_accuracy(H, 0.9) is None


def test_local_sgd_rounds_in_a_real_run():
    h = Trainer(model="mlp", data="digits", workers=2, sync="local_sgd(period=4)", progress=False,
                eval_every=4).fit(steps=12)
    assert pl.rounds(h).tolist() == [0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3]
    assert pl.measured(h)["rounds"].tolist() == [1, 2, 3]           # evaluated right after each average


def test_accuracy_curves_axes():
    other = _history([10] * 6, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    ax = pl.accuracy_curves({"local": H, "bsp": other}, x="bytes", logx=True, title="t",
                            styles={"bsp": {"color": "k"}})
    lines = ax.get_lines()
    assert [l.get_label() for l in lines] == ["local", "bsp"]
    assert list(lines[0].get_xdata()) == [100, 200] and list(lines[1].get_ydata()) == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    assert lines[1].get_color() == "k" and ax.get_xscale() == "log" and ax.get_title() == "t"
    assert ax.get_xlabel().startswith("bytes sent per worker")
    ax = pl.accuracy_curves({"local": H}, x="rounds", ax=plt.figure().gca())
    assert list(ax.get_lines()[0].get_xdata()) == [1, 2]
    with pytest.raises(ValueError, match="unknown x axis 'time'; valid: rounds, bytes"):
        pl.accuracy_curves({"local": H}, x="time")


def test_label_distribution_stacks_every_sample():
    ds = data.load("digits", seed=0)
    shards = data.split_dirichlet(ds.y_train, 8, 0.1, seed=0)
    ax = pl.label_distribution(ds.y_train, shards, 10, title="a = 0.1")
    assert len(ax.patches) == 8 * 10
    heights = np.zeros(8)
    for p in ax.patches:
        heights[round(p.get_x() + p.get_width() / 2)] += p.get_height()
    assert heights.tolist() == [len(s) for s in shards]
    assert ax.get_title() == "a = 0.1"


def test_accuracy_vs_alpha():
    results = {"FedAvg": {0.1: 0.8, 100.0: 0.95, 1.0: 0.9}, "local SGD": {0.1: 0.5, 100.0: 0.94}}
    ax = pl.accuracy_vs_alpha(results, iid={"FedAvg": 0.96, "local SGD": math.nan}, title="x")
    lines = ax.get_lines()
    assert list(lines[0].get_xdata()) == [0.1, 1.0, 100.0] and list(lines[0].get_ydata()) == [0.8, 0.9, 0.95]
    assert list(lines[1].get_ydata()) == [0.96, 0.96]                 # the IID level of FedAvg, dotted
    assert [l.get_label() for l in lines if not l.get_label().startswith("_")] == ["FedAvg", "local SGD"]
    assert ax.get_xscale() == "log"


def test_label_distribution_of_an_iid_split_is_balanced():
    y = torch.arange(400) % 4
    shards = data.split_iid(400, 4, seed=1)
    counts = data.label_histogram(y, shards, 4)
    ax = pl.label_distribution(y, shards, 4)
    assert len(ax.patches) == 16 and counts.sum() == 400


SMALL = dict(steps=16, workers=4, lr=0.5, seed=0)


def test_run_settings():
    s = pl.run_settings(4, 0.1, steps=16)
    assert s["sync"] == "local_sgd(period=4)" and s["split"] == "dirichlet" and s["dirichlet_alpha"] == 0.1
    assert s["eval_every"] == 4
    assert pl.run_settings(1, None)["sync"] == "bsp" and pl.run_settings(1, None)["split"] == "iid"
    with pytest.raises(ValueError, match="multiple of the period"):
        pl.run_settings(32, 0.1, steps=48)
    with pytest.raises(ValueError, match="period must be one of"):
        pl.run_settings(3, 0.1)


def test_runs_are_cached_and_remembered():
    pl._CACHE.clear()
    h = pl.local_sgd_run(4, 1.0, **SMALL)
    assert pl.local_sgd_run(4, 1.0, **SMALL) is h and len(h.steps) == 16
    # a run made elsewhere with the same settings is taken, a different one refused
    settings = pl.run_settings(2, None, **SMALL)
    mine = Trainer(**settings).fit(steps=16)
    assert pl.remember({(2, None): mine}, **SMALL) == 1
    assert pl.local_sgd_run(2, None, **SMALL) is mine
    other = Trainer(**{**settings, "lr": 0.1}).fit(steps=16)
    with pytest.raises(ValueError, match="was not made with"):
        pl.remember({(2, None): other}, **SMALL)
    with pytest.raises(ValueError, match="was not made with"):
        pl.remember({(2, None): Trainer(**{**settings, "batch_size": 16}).fit(steps=16)}, **SMALL)


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_local_sgd_explorer_headless():
    w = pytest.importorskip("ipywidgets")
    pl._CACHE.clear()
    ui = pl.local_sgd_explorer(period=4, alpha=0.1, **SMALL)
    assert isinstance(ui, w.VBox)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["period H"] == 4 and values["Dirichlet a"] == 0.1
    left, right = ui.shown.axes
    assert len(left.patches) == 4 * 10 and "Dirichlet split, a = 0.1" in left.get_title()
    assert [l.get_label() for l in right.get_lines()] == ["BSP (H = 1)", "local SGD, H = 4"]
    assert "final test accuracy: BSP" in right.get_title()
    # moving a control redraws (a new figure); IID and H = 1 draw one curve and balanced bars
    period = next(c for c in ui.children if getattr(c, "description", "") == "period H")
    alpha = next(c for c in ui.children if getattr(c, "description", "") == "Dirichlet a")
    before = len(plt.get_fignums())
    period.value = 1
    assert len(plt.get_fignums()) == before  # redrawn in place, and closed once shown
    alpha.value = "iid"
    left, right = ui.shown.axes
    assert "IID split" in left.get_title()
    assert [l.get_label() for l in right.get_lines()] == ["BSP (H = 1)"]
