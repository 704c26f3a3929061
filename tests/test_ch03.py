"""Chapter 03's figures and widget: parameter server against ring, gossip topologies, drawn headless."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from commlab.chapters import ch03  # noqa: E402
from commlab.arch.ps_layout import ps_sharded
from commlab.arch.ring import cost as ring_cost


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_servers_for():
    assert ch03.servers_for(3, 64) == 3
    assert ch03.servers_for("N", 64) == 64
    assert ch03.servers_for("N/4", 64) == 16
    assert ch03.servers_for("N / 4", 2) == 1  # at least one server
    for bad in (0, True, "M", "N/0", "N/x", 2.5):
        with pytest.raises(ValueError, match="servers must be"):
            ch03.servers_for(bad, 8)


def test_ps_vs_allreduce_lines():
    from commlab.net import cost

    ax = ch03.ps_vs_allreduce(102.4e6, "100GbIB", workers=(4, 16, 64), servers=(1, "N/4", "N"))
    lines = ax.get_lines()
    assert [l.get_label() for l in lines] == ["ring all-reduce", "PS, S = 1", "PS, S = N/4", "PS, S = N"]
    assert list(lines[0].get_ydata()) == pytest.approx([ring_cost(102.4e6, n, "100GbIB") * 1e3
                                                        for n in (4, 16, 64)])
    assert list(lines[2].get_ydata()) == pytest.approx([ps_sharded(102.4e6, n, n // 4, "100GbIB") * 1e3
                                                        for n in (4, 16, 64)])
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "100GbIB" in ax.get_title() and "102.4 MB" in ax.get_title()
    assert ax.get_xlabel() and ax.get_ylabel()


def test_topology_figure_draws_every_edge():
    from commlab.decentral import topology

    for top in (topology.ring(8), topology.star(6), topology.hypercube(8), topology.exponential(12)):
        ax = ch03.topology_figure(top)
        edges = sum(top.degrees) // 2
        assert len(ax.get_lines()) == edges  # no wrap-around edges off a torus
        assert len(ax.collections[0].get_offsets()) == top.n
        assert f"n = {top.n}" in ax.get_title()
        plt.close("all")
    top = topology.torus(16)  # 4 x 4: 24 grid edges in the plane, 8 wrap-around edges of 2 stubs each
    ax = ch03.topology_figure(top)
    assert len(ax.get_lines()) == 24 + 2 * 8
    assert sum(l.get_linestyle() == "--" for l in ax.get_lines()) == 16
    assert ch03.topology_layout(topology.star(5))[0] == (0.0, 0.0)


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_ps_explorer_headless():
    w = pytest.importorskip("ipywidgets")
    ui = ch03.ps_explorer(nbytes=440e6, link="100GbIB", servers=16, max_workers=256)
    assert isinstance(ui, w.VBox)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["gradient MB"] == pytest.approx(440)
    assert values["network"] == "100GbIB" and values["servers S"] == 16 and values["max workers"] == 256
    ax = ui.shown.axes[0]
    assert [l.get_label() for l in ax.get_lines()] == ["ring all-reduce", "PS, S = 1", "PS, S = 16", "PS, S = N"]
    assert list(ax.get_lines()[0].get_xdata()) == [2, 4, 8, 16, 32, 64, 128, 256]
    # one server: no duplicate line; a new figure on every change
    shards = next(c for c in ui.children if getattr(c, "description", "") == "servers S")
    before = len(plt.get_fignums())
    shards.value = 1
    assert len(plt.get_fignums()) == before  # redrawn in place, and closed once shown
    assert [l.get_label() for l in ui.shown.axes[0].get_lines()] == ["ring all-reduce", "PS, S = 1", "PS, S = N"]
