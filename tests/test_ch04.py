"""Chapter 04's measurements and figures: every worker's clock and the server's log in the
History, the SSP clock bound on that log, and the panels drawn headless."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from commlab.chapters import ch04 as ps  # noqa: E402
from commlab.history import History, clock_gaps  # noqa: E402
from commlab.net import Network, Stragglers  # noqa: E402
from commlab.train import Trainer  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)  # later tests must not inherit it
    plt.close("all")


def _run(sync, workers=3, slowdown=None, **kw):
    net = Network("10GbE", flops=1e9, slowdown=slowdown)
    return Trainer(model="mlp", data="digits", workers=workers, sync=sync, arch=kw.pop("arch", "ps"), net=net,
                   seed=0, lr=0.05, progress=False, **kw)


def test_lr_convention():
    assert ps.lr_for("bsp", 0.8, 8) == 0.8 and ps.lr_for("backup(backups=2)", 0.8, 8) == 0.8
    for spec in ("asp", "ssp(staleness=3)", "round_robin", "hogwild"):
        assert ps.lr_for(spec, 0.8, 8) == pytest.approx(0.1)


def test_styles_give_each_family_its_colour_and_members_their_line_style():
    st = ps.styles(["bsp", "ssp(staleness=1)", "ssp(staleness=3)", "asp", "mystery"])
    assert st["bsp"] == ("C0", "-") and st["asp"] == ("C3", "-")
    assert st["ssp(staleness=1)"] == ("C2", "-") and st["ssp(staleness=3)"] == ("C2", "--")
    assert st["mystery"][0] == "C7"


@pytest.mark.parametrize("sync", ["bsp", "asp", "ssp(staleness=1)", "backup(backups=1)", "round_robin"])
@pytest.mark.parametrize("slowdown", [None, {2: 3.0}, Stragglers(prob=0.3, factor=4.0, seed=1)],
                         ids=["even", "persistent", "random"])
def test_history_holds_every_workers_clock_and_the_servers_log(sync, slowdown):
    run = _run(sync, slowdown=slowdown)
    h = run.fit(steps=9)
    times = np.array(h.worker_time)
    assert times.shape == (9, 3)
    assert np.array_equal(times.max(axis=1), np.array(h.sim_time))        # the slowest worker's clock
    assert (np.diff(times, axis=0) > 0).all()                             # every step takes time
    assert sorted(s for _, _, s in h.applied) == sorted(ps.staleness_values(h).tolist())
    assert len(h.applied) + sum(h.dropped) == 3 * 9
    if sync == "bsp":
        t_msg = run.network.link.time(4 * run.num_params)
        assert np.ptp(times, axis=1).max() <= 3 * t_msg * (1 + 1e-9)      # the workers end one reply apart


@pytest.mark.parametrize("s", [0, 1, 3])
def test_ssp_keeps_the_clock_spread_within_s_plus_one(s):
    h = _run(f"ssp(staleness={s})", workers=4, slowdown={3: 5.0}).fit(steps=20)
    gaps = clock_gaps(h.applied, 4)
    assert gaps.max() == s + 1                                           # reached, never exceeded
    stale = np.array([st for _, _, st in h.applied])
    assert stale.max() <= (4 - 1) * (2 * s + 1)                          # the staleness bound
    asp = clock_gaps(_run("asp", workers=4, slowdown={3: 5.0}).fit(steps=20).applied, 4)
    assert asp.max() > 10                                                # nothing holds ASP's fast workers


def test_staleness_values_leave_out_dropped_gradients():
    h = History(steps=[1, 2], staleness=[[0, None, 3], [2, 1, None]])
    assert ps.staleness_values(h).tolist() == [0, 3, 2, 1]
    assert ps.staleness_values(h, workers=[2]).tolist() == [3]
    assert ps.staleness_values(History()).size == 0


def test_time_to_loss():
    h = History(steps=[1, 2, 3, 4, 5], loss=[3.0, 2.0, 1.0, 0.5, 0.4], sim_time=[0.1, 0.2, 0.3, 0.4, 0.5])
    assert ps.time_to_loss(h, 1.5, smooth=1) == 0.3
    assert ps.time_to_loss(h, 0.45, smooth=1) == 0.5
    assert math.isnan(ps.time_to_loss(h, 0.1, smooth=1))
    # a running mean of 3 (edges padded with the end values): 2.67, 2.0, 1.17, 0.63, 0.43
    assert ps.time_to_loss(h, 1.5, smooth=3) == 0.3 and ps.time_to_loss(h, 0.6, smooth=3) == 0.5


def test_describe_names_the_setup():
    run = _run("asp", slowdown={2: 4.0}, momentum=0.9, batch_size=16)
    text = ps.describe(run, 50)
    for part in ["3 workers", "mlp on digits", "10GbE", "1 GFLOP/s", "rank 2 x4", "50 steps", "batch 16",
                 "lr 0.05", "momentum 0.9"]:
        assert part in text, part
    assert "Stragglers(prob=0.1" in ps.describe(_run("asp", slowdown=Stragglers(0.1, 2.0)), 5, lr="lr 1 per gradient")
    assert "no stragglers" in ps.describe(_run("asp"), 5)


def test_run_syncs_and_the_figures_draw_headless():
    net = Network("10GbE", flops=1e9, slowdown={2: 3.0})
    runs = ps.run_syncs(["bsp", "ssp(staleness=1)", "asp"], workers=3, steps=8, net=net, eta=0.3, eval_every=4)
    assert list(runs) == ["bsp", "ssp(staleness=1)", "asp"]
    assert runs["asp"][0].config.lr == pytest.approx(0.1) and runs["bsp"][0].config.lr == 0.3
    hs = {s: h for s, (_, h) in runs.items()}
    ax = ps.loss_figure(hs, "sim_time", smooth=3, title="t")
    assert [l.get_label() for l in ax.get_lines()] == list(hs)
    assert ax.get_lines()[0].get_xdata()[-1] == pytest.approx(hs["bsp"].sim_time[-1] * 1e3)
    with pytest.raises(ValueError, match="'step' or 'sim_time'"):
        ps.loss_figure(hs, "bytes")
    plt.figure()
    ax = ps.staleness_histogram(hs)
    assert any("asp: mean" in t.get_text() for t in ax.get_legend().get_texts())
    axes = ps.progress_figure(hs, slow=[2])
    assert len(axes) == 3 and len(axes[2].get_lines()) == 3
    plt.figure()
    ax = ps.accuracy_time_figure(hs)
    xs = ax.get_lines()[2].get_xdata()                                   # asp: rank 0's clock at steps 4 and 8
    assert xs.tolist() == pytest.approx([hs["asp"].worker_time[k][0] * 1e3 for k in (3, 7)])


def test_straggler_panel():
    fig, out = ps.straggler_panel(staleness=1, slowdown=3.0, workers=3, steps=6)
    assert list(out) == ["bsp", "ssp(staleness=1)", "asp", "backup(backups=1)"]
    assert len(fig.axes) == 3
    for spec, (run, h) in out.items():
        assert run.network.slowdown == {2: 3.0}
    end = {spec: h.worker_time[-1] for spec, (_, h) in out.items()}
    assert end["asp"][0] < end["bsp"][0]                                   # the fast worker gains under ASP
    assert math.isclose(end["bsp"][0], end["bsp"][2], rel_tol=1e-2)        # BSP: together
    with pytest.raises(ValueError, match="slowdown must be >= 1"):
        ps.straggler_panel(slowdown=0.5, workers=3, steps=2)


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_sync_explorer_headless():
    w = pytest.importorskip("ipywidgets")
    before = len(plt.get_fignums())
    ui = ps.sync_explorer(staleness=1, slowdown=3.0, workers=3, steps=6)
    assert isinstance(ui, w.VBox)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["staleness φ"] == 1 and values["slowdown"] == pytest.approx(3.0)
    # one figure, shown once and closed: nothing is left open
    assert len(plt.get_fignums()) == before  # redrawn in place, and closed once shown
    fig = ui.shown
    assert len(fig.axes) == 3 and "rank 2 x3" in fig._suptitle.get_text()
    labels = [l.get_label() for l in fig.axes[0].get_lines()]
    assert labels == ["bsp", "ssp(staleness=1)", "asp", "backup(backups=1)"]
    # moving a slider redraws with the new staleness bound and slowdown
    s = next(c for c in ui.children if getattr(c, "description", "") == "staleness φ")
    factor = next(c for c in ui.children if getattr(c, "description", "") == "slowdown")
    s.value = 4
    assert [l.get_label() for l in ui.shown.axes[0].get_lines()][1] == "ssp(staleness=4)"
    factor.value = 6.0
    assert "rank 2 x6" in ui.shown._suptitle.get_text()
    assert len(plt.get_fignums()) == before  # redrawn in place, and closed once shown
