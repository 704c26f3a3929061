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


# ----- all-reduce algorithms (chapter 02) ------------------------------------------------------
def test_allreduce_time_is_the_closed_form():
    from commlab.net import cost

    for name in ("naive", "ring", "halving_doubling"):
        assert plots.allreduce_time(name, 1e6, 12, "10GbE") == cost.allreduce(1e6, 12, "10GbE", name)
    kw = dict(group_size=4, intra_link="NVLink")
    assert plots.allreduce_time("hierarchical", 1e6, 16, "10GbE", **kw) == cost.allreduce(1e6, 16, "10GbE",
                                                                                           "hierarchical", **kw)
    # trees: a fixed segment count is the closed form / the replayed schedule; a tuple takes the best
    for p, s, n, link in [(2, 1, 1e3, "10GbE"), (7, 4, 1e6, "100GbIB"), (16, 8, 3e7, "10GbE"), (33, 2, 10.0, "WAN")]:
        assert plots.allreduce_time("tree", n, p, link, segments=s) == cost.allreduce_binary_tree(n, p, link, s)
        assert plots.allreduce_time("double_tree", n, p, link, segments=s) == pytest.approx(
            cost.allreduce_double_tree(n, p, link, s), rel=1e-12)
        for name in ("tree", "double_tree"):
            best = min(plots.allreduce_time(name, n, p, link, segments=k) for k in plots.SEGMENT_CHOICES)
            assert plots.allreduce_time(name, n, p, link) == best
    assert plots.allreduce_time("double_tree", 1e6, 1, "10GbE") == 0.0


def test_allreduce_winner():
    assert plots.allreduce_winner(1.0, 256, "10GbE") == "halving_doubling"       # latency-bound
    assert plots.allreduce_winner(1e9, 192, "10GbE") == "ring"                   # bandwidth-bound, not 2^k
    assert plots.allreduce_winner(1.0, 64, "10GbE", ("ring", "double_tree")) == "double_tree"
    assert plots.allreduce_winner(1e9, 64, "10GbE", ("ring", "double_tree")) == "ring"
    assert plots.allreduce_winner(1e3, 2, "10GbE", ("ring", "halving_doubling")) == "ring"  # a tie: first listed


def test_allreduce_vs_size_lines():
    from commlab.net import cost

    sizes = (1.0, 1e3, 1e6)
    ax = plots.allreduce_vs_size(8, "100GbIB", sizes=sizes, mark=1e3)
    lines = ax.get_lines()
    assert [l.get_label() for l in lines[:5]] == list(plots.ALLREDUCE_ALGORITHMS)
    assert list(lines[1].get_ydata()) == pytest.approx([cost.allreduce_ring(n, 8, "100GbIB") for n in sizes])
    assert len(lines) == 6 and list(lines[5].get_xdata()) == [1e3, 1e3]  # the marked size
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "N = 8" in ax.get_title() and "100GbIB" in ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1 B", "1 kB", "1 MB"]


def test_allreduce_winner_map_cells():
    worlds, sizes, algs = (2, 4, 6), (1.0, 1e9), ("ring", "double_tree", "halving_doubling")
    ax = plots.allreduce_winner_map("10GbE", worlds=worlds, sizes=sizes, algorithms=algs)
    cells = ax.collections[0].get_array().reshape(len(worlds), len(sizes))
    want = [[algs.index(plots.allreduce_winner(n, p, "10GbE", algs)) for n in sizes] for p in worlds]
    assert cells.tolist() == want
    assert [t.get_text() for t in ax.get_yticklabels()] == ["2", "4", "6"]
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {algs[k] for row in want for k in row}
    assert "10GbE" in ax.get_title() and ax.get_xlabel() and ax.get_ylabel()


def test_allreduce_bars():
    from commlab.net import cost

    ax = plots.allreduce_bars(1e8, 64, "10GbE", group_size=8)
    algs = plots.ALLREDUCE_ALGORITHMS + ("hierarchical",)
    assert len(ax.patches) == len(algs)
    heights = [b.get_width() for b in ax.patches]
    assert heights[1] == pytest.approx(cost.allreduce_ring(1e8, 64, "10GbE") * 1e3)
    assert heights[-1] == pytest.approx(
        cost.allreduce_hierarchical(1e8, 64, "10GbE", group_size=8, intra_link="NVLink") * 1e3)
    labels = [t.get_text() for t in ax.texts]
    assert sum("(fastest)" in t for t in labels) == 1 and "10.1 s" in labels[0]
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "hierarchical (8/node)"
    assert "100 MB on N = 64" in ax.get_title() and ax.get_xlabel()


def test_ring_chunks_figure():
    masks = [[[1, 0], [0, 2]], [[1, 2], [0, 2]], [[3, 2], [1, 3]]]  # 2 ranks, 2 chunks, 3 frames
    axes = plots.ring_chunks_figure(masks, titles=["a", "b", "c"])
    assert len(axes) == 3 and [ax.get_title() for ax in axes] == ["a", "b", "c"]
    assert [t.get_text() for t in axes[2].texts] == ["01", "1", "0", "01"]
    assert len(axes[0].patches) == 0 and len(axes[1].patches) == 1 and len(axes[2].patches) == 3  # changed cells
    assert axes[0].images[0].get_array().tolist() == [[1, 0], [0, 1]]  # contributions counted
    assert axes[0].get_xlabel() == "chunk" and axes[0].get_ylabel() == "rank"
