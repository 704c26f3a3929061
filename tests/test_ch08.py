"""Chapter 08's helpers and figures: real runs against the dispatcher, the timeline's bars,
the fusion sweep, the survey's tables and the widget, drawn headless."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from commlab import schedule as sched  # noqa: E402
from commlab import sim  # noqa: E402
from commlab.arch import ring  # noqa: E402
from commlab.chapters import ch08  # noqa: E402
from commlab.net import Network  # noqa: E402
from commlab.net.link import get_link  # noqa: E402
from commlab.schedule.profile import Profile  # noqa: E402

MS = 1e-3
TOY = Profile([1 * MS] * 4, [2 * MS] * 4, [1_000_000, 4_000_000, 4_000_000, 1_000_000])
TOY_COMM = lambda n: 1 * MS + n / 1e9  # noqa: E731 - 1 ms + 1 ms per MB


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_comm_time_is_the_ring_closed_form():
    link = get_link("10GbE")
    ct = ch08.comm_time(4, link)
    for n in (0, 1000, 3_000_000):
        assert ct(n) == pytest.approx(ring.cost(n, 4, link), rel=1e-12)


def test_step_messages_match_the_dispatcher():
    trainer, h = ch08.run("mg_wfbp", 2, Network("10GbE", flops=2e10), steps=3)
    prof, plan = trainer.schedule.profile, trainer.schedule.plan
    want = sched.iteration(plan, prof, ch08.comm_time(2, get_link("10GbE")))[1]
    for step in (1, 2, 3):
        got = ch08.step_messages(h, step, prof)
        assert [m.layers for m in got] == [m.layers for m in want]
        for g, w in zip(got, want):
            assert g.ready == pytest.approx(w.ready, abs=1e-12)
            assert g.start == pytest.approx(w.start, abs=1e-12) and g.end == pytest.approx(w.end, abs=1e-12)
    with pytest.raises(ValueError, match="no messages"):
        ch08.step_messages(h, 9, prof)


def test_groups():
    plan = sched.get("mg_wfbp").plan(TOY, TOY_COMM)
    assert ch08.groups(plan) == [[3], [2], [0, 1]]
    assert ch08.groups(sched.get("wfbp").plan(TOY)) == [[3], [2], [1], [0]]
    with pytest.raises(ValueError, match="priority"):
        ch08.groups(sched.get("bytescheduler").plan(TOY))


def test_forward_times():
    msgs = sched.iteration(sched.get("wfbp").plan(TOY), TOY, TOY_COMM)[1]  # last message ends at 16 ms
    fwd = ch08.forward_times(TOY, msgs, forward_waits=False)
    assert [round(s / MS, 9) for s, _ in fwd] == [16, 17, 18, 19] and fwd[-1][1] == pytest.approx(20 * MS)
    # forward layer by layer: layer 0's message (the last) decides, nothing starts before backward ends
    waits = ch08.forward_times(TOY, msgs, forward_waits=True)
    assert waits[0][0] == pytest.approx(16 * MS)


def test_timeline_figure():
    t, msgs = sched.iteration(sched.get("mg_wfbp").plan(TOY, TOY_COMM), TOY, TOY_COMM)
    ax = ch08.timeline_figure(TOY, msgs, title="toy")
    assert ax.get_title() == "toy"
    assert [tick.get_text() for tick in ax.get_yticklabels()] == ["comm", "compute"]
    bars = ax.collections
    assert len(bars) == 2 * TOY.layers + len(msgs)                      # backward, forward, messages
    comm = bars[2 * TOY.layers:]
    assert [c.get_hatch() for c in comm] == [None, None, "//"]           # the merged message is hatched
    spans = [tuple(p.get_paths()[0].vertices[0]) for p in comm]
    assert spans[0][0] == pytest.approx(2.0) and spans[2][0] == pytest.approx(9.0)  # starts in ms
    assert ax.get_xlim()[1] == pytest.approx(t / MS * 1.01)
    dashed = [l.get_xdata()[0] for l in ax.get_lines() if l.get_linestyle() == "--"]
    assert dashed == [pytest.approx(19.0)]                               # the iteration ends at 19 ms
    # timeline dicts (a History's) draw the same
    rows = [dict(layers=list(m.layers), bytes=m.nbytes, ready=m.ready, start=m.start, end=m.end) for m in msgs]
    ax2 = ch08.timeline_figure(TOY, rows)
    assert "3 messages, iteration 19 ms" in ax2.get_title()


def test_fusion_sweep_and_figure():
    sweep = ch08.fusion_sweep(TOY, TOY_COMM, [0.5, 5, 10])
    wfbp = sched.iteration(sched.get("wfbp").plan(TOY), TOY, TOY_COMM)[0]
    bsp = sched.iteration(sched.baseline(TOY), TOY, TOY_COMM)[0]
    assert sweep[0][1] == pytest.approx(wfbp)                            # buckets smaller than a layer: WFBP
    assert sweep[-1][1] == pytest.approx(bsp)                            # one bucket of everything: BSP
    ax = ch08.fusion_figure(sweep, wfbp=wfbp, bsp=bsp, title="t")
    assert ax.get_xscale() == "log" and ax.get_title() == "t"
    best = min(sweep, key=lambda s: s[1])
    assert list(ax.collections[0].get_offsets()[0]) == pytest.approx([best[0], best[1] * 1e3])
    assert sorted(l.get_ydata()[0] for l in ax.get_lines()[1:]) == pytest.approx(sorted([wfbp * 1e3, bsp * 1e3]))


def test_cluster_shape():
    c = ch08.cluster(32, "10GbE")
    assert (c.nodes, c.gpus_per_node, c.inter.name, c.intra.name) == (8, 4, "10GbE-survey", "PCIe3-survey")
    c = ch08.cluster(4)
    assert (c.nodes, c.gpus_per_node, c.inter.name) == (1, 4, "100GbIB-survey")


def test_speedups_and_figures():
    table = ch08.speedups(models=(TOY,), gpus=(4, 8), methods=("bsp_a2a", "mg_wfbp"))
    assert len(table) == 3 * 2 * 2 and set(table.columns) >= {"network", "model", "gpus", "method", "ms", "speedup"}
    row = table[(table.network == "10GbE") & (table.gpus == 8) & (table.method == "mg_wfbp")].iloc[0]
    it = sim.iteration(TOY, ch08.cluster(8, "10GbE"), method="mg_wfbp")
    assert row.speedup == pytest.approx(it.speedup) and row.ms == pytest.approx(it.time * 1e3)
    axes = ch08.speedup_figure(table, "10GbE")
    assert len(axes) == 1 and axes[0].get_xscale() == "log"
    assert [l.get_label() for l in axes[0].get_lines()] == ["ideal", "bsp_a2a", "mg_wfbp"]
    ax = ch08.scaling_figure(table[table.network == "100GbIB"], highlight=("mg_wfbp", 8))
    assert [l.get_label() for l in ax.get_lines()] == ["bsp_a2a", "mg_wfbp"]
    assert ax.get_ylim() == (0, 1.05) and len(ax.collections) == 1


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_schedule_explorer_headless():
    w = pytest.importorskip("ipywidgets")
    ui = ch08.schedule_explorer(model="resnet50", network="10GbE", gpus=8, method="wfbp_a2a")
    assert isinstance(ui, w.VBox)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values == {"model": "resnet50", "network": "10GbE", "GPUs": 8, "method": "wfbp_a2a"}
    assert "resnet50, wfbp_a2a, 8 GPUs on 10GbE" in ui.shown.axes[0].get_title()
    gpus = next(c for c in ui.children if getattr(c, "description", "") == "GPUs")
    gpus.value = 64
    assert "64 GPUs" in ui.shown.axes[0].get_title()


def test_dag_figure():
    ax = ch08.dag_figure(3)
    boxes = [t for t in ax.texts if not isinstance(t, matplotlib.text.Annotation)]
    labels = [t.get_text() for t in boxes]
    assert labels[:3] == ["compute", "comm", "next forward"]
    assert sorted(labels[3:]) == sorted(f"${k}_{l}$" for k in ("F", "B", "C", "F'") for l in range(3))
    arrows = [c for c in ax.get_children() if isinstance(c, matplotlib.text.Annotation)]
    # forward chain 2, F -> B 1, backward chain 2, B -> C 3, C -> F' 3, next forward chain 2
    assert len(arrows) == 13
    where = {t.get_text(): t.get_position() for t in boxes}
    assert where["$C_0$"][0] == where["$B_0$"][0] and where["$C_0$"][1] < where["$B_0$"][1]
