"""Chapter 09's helpers and figures: the run cache, the closed-form step times against a run's own
clock, the tables, the mixing-matrix variants and the widget, drawn headless."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from commlab import compress  # noqa: E402
from commlab.arch import ring  # noqa: E402
from commlab.chapters import ch09  # noqa: E402
from commlab.decentral import gossip  # noqa: E402
from commlab.decentral import topology as T  # noqa: E402
from commlab.decentral.tuning import tune_gamma  # noqa: E402
from commlab.history import Diverged, History  # noqa: E402
from commlab.net.link import LinkModel, get_link  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def fake(acc=(0.5, 0.9), test_loss=(1.0, 0.3), consensus=(0.2, 0.1), sent=((600, 600), (600, 600))):
    h = History()
    h.steps = list(range(1, len(acc) + 1))
    h.test_accuracy, h.test_loss, h.consensus = list(acc), list(test_loss), list(consensus)
    h.loss = list(test_loss)
    h.bytes_sent = [list(r) for r in sent]
    h.sim_time = [0.1 * k for k in h.steps]
    h.worker_time = [[0.1 * k] * len(sent[0]) for k in h.steps]
    return h


def test_qsgd_bits():
    assert ch09.qsgd(2) == "qsgd(levels=3)" and ch09.qsgd(16) == "qsgd(levels=65535)"
    assert compress.get(ch09.qsgd(4)).bits == 5                    # a sign and 4 bits of level on our wire
    assert set(ch09.PAPER) == set(ch09.COMPRESSORS)


def test_outcome_and_table1():
    assert ch09.outcome(Diverged("dcd_psgd", 12, 3)) == "diverged at step 12"
    assert ch09.outcome(fake()) == "90.0" and ch09.outcome(fake(), "consensus") == "0.1"
    results = {(label, m): fake() for label in ch09.COMPRESSORS for m in ch09.METHODS}
    results["random 1%", "DCD-PSGD"] = Diverged("dcd_psgd", 7, 0)
    t = ch09.table1(results)
    assert list(t.index) == list(ch09.COMPRESSORS)
    assert t.loc["random 1%", ("DCD-PSGD", "ours")] == "diverged at step 7"
    assert t.loc["random 1%", ("DCD-PSGD", "paper")] == "diverges"
    assert t.loc["top 1%", ("CHOCO-SGD", "paper")] == "91.73" and t.loc["top 1%", ("ECD-PSGD", "paper")] == "18.03*"


def test_run_is_cached_and_timed_by_the_closed_form():
    h = ch09.run("dpsgd", workers=4, steps=3)
    assert ch09.run("dpsgd", workers=4, steps=3) is h
    d, flops = ch09.model_size()
    per_step = ch09.step_seconds("gossip", ch09.payload_bytes(h, 2), get_link("10GbE"), workers=4)
    assert ch09.payload_bytes(h, 2) == 4 * d
    assert per_step == pytest.approx(flops / ch09.FLOPS + 2 * get_link("10GbE").time(4 * d), rel=1e-12)
    assert h.sim_time == pytest.approx([per_step * k for k in (1, 2, 3)], rel=1e-9)
    b = ch09.run("bsp", workers=4, steps=2)
    # the ring's 4 chunks of 4,810 values hold 1,202 or 1,203: the closed form (d/4 each) to 1e-4
    assert b.sim_time[-1] == pytest.approx(2 * ch09.step_seconds("allreduce", 4 * d, "10GbE", workers=4), rel=1e-4)


def test_a_diverging_run_is_cached_as_diverged(monkeypatch):
    monkeypatch.setitem(ch09.SETUP, "lr", 1e4)
    r = ch09.run("dpsgd", workers=4, steps=20, link="100GbIB")
    assert isinstance(r, Diverged) and r.step <= 20
    assert ch09.run("dpsgd", workers=4, steps=20, link="100GbIB") is r
    assert ch09.steps_to_loss(r, 1.0) is None


def test_payload_steps_and_time_grid():
    assert ch09.payload_bytes(fake(), 2) == 300
    with pytest.raises(ValueError, match="vary"):
        ch09.payload_bytes(fake(sent=((600, 600), (600, 500))), 2)
    assert ch09.steps_to_loss(fake(), 0.5) == 2 and ch09.steps_to_loss(fake(), 0.1) is None
    alphas, betas = [1e-6, 1e-3], [1e-9, 1e-8, 1e-7]
    grid = ch09.time_grid({"ar": ("allreduce", 1000, 10), "never": ("gossip", 100, None)}, alphas, betas)
    assert grid["ar"].shape == (3, 2) and np.isinf(grid["never"]).all()
    assert grid["ar"][2, 1] == pytest.approx(10 * ch09.step_seconds("allreduce", 1000, LinkModel(1e-3, 1e-7)))
    assert ch09.step_seconds("allreduce", 1000, LinkModel(1e-3, 1e-7)) - ch09.model_size()[1] / ch09.FLOPS == \
        pytest.approx(ring.cost(1000, 8, LinkModel(1e-3, 1e-7)))
    axes = ch09.grid_figure({**grid, "gossip": grid["ar"] * 2}, alphas, betas)
    assert [a.get_title() for a in axes] == ["ar", "never", "gossip"] and axes[0].get_xscale() == "log"


def test_curves_and_clocks():
    ax = ch09.curves({"a": fake(), "b": Diverged("ecd_psgd", 4, 1)}, "consensus")
    labels = [l.get_label() for l in ax.get_lines()]
    assert labels == ["a", "b: diverged at step 4"] and ax.get_yscale() == "log"
    ax = ch09.curves({"a": fake()}, "test_loss", x="sim_time", logy=False)
    assert list(ax.get_lines()[0].get_xdata()) == pytest.approx([0.1, 0.2])
    ax = ch09.worker_clocks_figure({"x": fake(), "y": fake()})
    assert len(ax.patches) == 4


def test_mixing_variants_and_gaps():
    for top in (T.ring(8), T.torus(16), T.complete(5)):
        assert np.allclose(ch09.mixing(top), ch09.mixing(top, "uniform"))  # regular: MH = uniform 1/(k+1)
    kite = T.Topology("kite", [[1, 2, 3], [0], [0], [0, 4], [3]])   # not regular: the weights differ
    mh, uniform = ch09.mixing(kite), ch09.mixing(kite, "uniform")
    assert mh[3, 4] == pytest.approx(1 / 3) and uniform[3, 4] == pytest.approx(1 / 4)
    assert np.allclose(uniform.sum(1), 1) and np.allclose(uniform, uniform.T) and uniform[4, 4] == pytest.approx(3 / 4)
    assert ch09.gap(ch09.mixing(T.ring(12))) == pytest.approx(2 / 3 * (1 - math.cos(2 * math.pi / 12)))
    assert ch09.gap(ch09.mixing(T.complete(7))) == pytest.approx(1.0)
    t = ch09.gap_table((4, 16), ("ring", "torus"), ("metropolis",))
    assert t.loc["torus", ("metropolis", 16)] == pytest.approx(0.4) and t.loc["ring", ("metropolis", 4)] == pytest.approx(2 / 3)


def test_gossip_decay_is_powers_of_w():
    w = ch09.mixing(T.ring(6))
    err = ch09.gossip_decay(w, 5, d=7)
    x = torch.randn(6, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64).numpy()
    x5 = np.linalg.matrix_power(w, 5) @ x
    assert err[5] == pytest.approx(((x5 - x5.mean(0)) ** 2).sum(1).mean())
    assert all(np.diff(err) <= 1e-15)
    axes = ch09.decay_figure(ns=(8,), names=("ring", "complete"), steps=5)
    assert len(axes[0].get_lines()) == 4 and axes[0].get_yscale() == "log"


def test_tuned_gamma_is_tune_gamma(monkeypatch):
    monkeypatch.setattr(ch09, "TUNE_STEPS", 15)
    d = ch09.model_size()[0]
    assert ch09.tuned_gamma(None, "ring", 3) == 1.0
    got = ch09.tuned_gamma("topk(0.02)", "ring", 3)
    assert got == tune_gamma("topk(0.02)", "ring", 3, d, steps=15) and got < 1
    assert ch09.tuned_gamma("topk(0.02)", "ring", 3) == got                  # cached


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_choco_explorer_headless():
    w = pytest.importorskip("ipywidgets")
    ui = ch09.choco_explorer(topology="ring", workers=4, compressor="top 10%", steps=3)
    assert isinstance(ui, w.VBox)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["topology"] == "ring" and values["workers"] == 4 and values["compressor"] == "top 10%"
    assert values["gamma"] == ch09.tuned_gamma("topk(0.1)", "ring", 4)
    assert "ring, 4 workers" in ui.shown.axes[0].get_title()
    topo = next(c for c in ui.children if getattr(c, "description", "") == "topology")
    topo.value = "complete"
    assert "complete, 4 workers" in ui.shown.axes[0].get_title()


def test_gossip_cost_is_the_library_closed_form():
    link = get_link("10GbE")
    assert ch09.step_seconds("gossip", 500, link, degree=3) == pytest.approx(
        ch09.model_size()[1] / ch09.FLOPS + gossip.cost(500, 3, link))
