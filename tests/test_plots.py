"""The book's figures: right number of lines and bars, drawn headless."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from commlab import perf, plots  # noqa: E402

MODELS = {"ResNet-50": (25_600_000, 24.5e9), "BERT-Base": (110_000_000, 110e6 * 249)}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_speedup_figure_lines():
    ax = plots.speedup_figure(MODELS, 256)
    assert isinstance(ax, matplotlib.axes.Axes)
    lines = ax.get_lines()
    assert len(lines) == len(MODELS) + 1  # one per model, plus the ideal line
    assert [l.get_label() for l in lines] == ["ResNet-50", "BERT-Base", "ideal"]
    assert list(lines[0].get_xdata()) == list(plots.WORKERS)
    assert list(lines[0].get_ydata()) == pytest.approx(
        perf.speedup_curve(*MODELS["ResNet-50"], 256, plots.WORKERS, "10GbE", 1e13))
    assert list(lines[-1].get_ydata()) == list(plots.WORKERS)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "10GbE" in ax.get_title()


def test_speedup_figure_on_given_axes_with_workers():
    fig, ax = plt.subplots()
    out = plots.speedup_figure({"m": (1e6, 1e9)}, 64, link="100GbIB", workers=(1, 2, 4), ax=ax)
    assert out is ax and len(ax.get_lines()) == 2
    assert list(ax.get_lines()[0].get_xdata()) == [1, 2, 4]


def test_step_breakdown_bars():
    d, c = MODELS["ResNet-50"]
    ax = plots.step_breakdown(d, c, 256)
    assert isinstance(ax, matplotlib.axes.Axes)
    assert len(ax.containers) == 2  # compute and communication
    assert [len(bc) for bc in ax.containers] == [len(plots.WORKERS)] * 2
    assert len(ax.patches) == 2 * len(plots.WORKERS)
    compute, comm = ax.containers
    for n, bc, bm in zip(plots.WORKERS, compute, comm):
        st = perf.step_time(d, c, 256, n, "10GbE", 1e13)
        assert bc.get_height() == pytest.approx(st.compute * 1e3)
        assert bm.get_height() == pytest.approx(st.comm * 1e3)
        assert bm.get_y() == pytest.approx(st.compute * 1e3)  # stacked on the compute bar
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(n) for n in plots.WORKERS]


def test_step_breakdown_custom_workers():
    ax = plots.step_breakdown(1_000_000, 1e9, 128, link="NVLink", workers=(1, 8))
    assert len(ax.patches) == 4


# ----- chapter 03: parameter servers and gossip ------------------------------------------------
def test_servers_for():
    assert plots.servers_for(3, 64) == 3
    assert plots.servers_for("N", 64) == 64
    assert plots.servers_for("N/4", 64) == 16
    assert plots.servers_for("N / 4", 2) == 1  # at least one server
    for bad in (0, True, "M", "N/0", "N/x", 2.5):
        with pytest.raises(ValueError, match="servers must be"):
            plots.servers_for(bad, 8)


def test_ps_vs_allreduce_lines():
    from commlab.net import cost

    ax = plots.ps_vs_allreduce(102.4e6, "100GbIB", workers=(4, 16, 64), servers=(1, "N/4", "N"))
    lines = ax.get_lines()
    assert [l.get_label() for l in lines] == ["ring all-reduce", "PS, S = 1", "PS, S = N/4", "PS, S = N"]
    assert list(lines[0].get_ydata()) == pytest.approx([cost.allreduce_ring(102.4e6, n, "100GbIB") * 1e3
                                                        for n in (4, 16, 64)])
    assert list(lines[2].get_ydata()) == pytest.approx([cost.ps_sharded(102.4e6, n, n // 4, "100GbIB") * 1e3
                                                        for n in (4, 16, 64)])
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "100GbIB" in ax.get_title() and "102.4 MB" in ax.get_title()
    assert ax.get_xlabel() and ax.get_ylabel()


def test_topology_figure_draws_every_edge():
    from commlab.arch import topology

    for top in (topology.ring(8), topology.star(6), topology.hypercube(8), topology.exponential(12)):
        ax = plots.topology_figure(top)
        edges = sum(top.degrees) // 2
        assert len(ax.get_lines()) == edges  # no wrap-around edges off a torus
        assert len(ax.collections[0].get_offsets()) == top.n
        assert f"n = {top.n}" in ax.get_title()
        plt.close("all")
    top = topology.torus(16)  # 4 x 4: 24 grid edges in the plane, 8 wrap-around edges of 2 stubs each
    ax = plots.topology_figure(top)
    assert len(ax.get_lines()) == 24 + 2 * 8
    assert sum(l.get_linestyle() == "--" for l in ax.get_lines()) == 16
    assert plots.topology_layout(topology.star(5))[0] == (0.0, 0.0)
