"""Chapter 02's figures and widget: times from the closed forms, the winner map, drawn headless."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from commlab.chapters import ch02  # noqa: E402
from commlab.arch.collectives import cost as allreduce_cost
from commlab.arch.hierarchical import cost as hierarchical_cost
from commlab.arch.ring import cost as ring_cost
from commlab.arch.tree import cost as tree_cost, double_tree_cost


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_allreduce_time_is_the_closed_form():
    from commlab.net import cost

    for name in ("naive", "ring", "halving_doubling"):
        assert ch02.allreduce_time(name, 1e6, 12, "10GbE") == allreduce_cost(1e6, 12, "10GbE", name)
    kw = dict(group_size=4, intra_link="NVLink")
    assert ch02.allreduce_time("hierarchical", 1e6, 16, "10GbE", **kw) == allreduce_cost(1e6, 16, "10GbE",
                                                                                           "hierarchical", **kw)
    # trees: a fixed segment count is the closed form / the replayed schedule; a tuple takes the best
    for p, s, n, link in [(2, 1, 1e3, "10GbE"), (7, 4, 1e6, "100GbIB"), (16, 8, 3e7, "10GbE"), (33, 2, 10.0, "WAN")]:
        assert ch02.allreduce_time("tree", n, p, link, segments=s) == tree_cost(n, p, link, s)
        assert ch02.allreduce_time("double_tree", n, p, link, segments=s) == pytest.approx(
            double_tree_cost(n, p, link, s), rel=1e-12)
        for name in ("tree", "double_tree"):
            best = min(ch02.allreduce_time(name, n, p, link, segments=k) for k in ch02.SEGMENT_CHOICES)
            assert ch02.allreduce_time(name, n, p, link) == best
    assert ch02.allreduce_time("double_tree", 1e6, 1, "10GbE") == 0.0


def test_allreduce_winner():
    assert ch02.allreduce_winner(1.0, 256, "10GbE") == "halving_doubling"       # latency-bound
    assert ch02.allreduce_winner(1e9, 192, "10GbE") == "ring"                   # bandwidth-bound, not 2^k
    assert ch02.allreduce_winner(1.0, 64, "10GbE", ("ring", "double_tree")) == "double_tree"
    assert ch02.allreduce_winner(1e9, 64, "10GbE", ("ring", "double_tree")) == "ring"
    assert ch02.allreduce_winner(1e3, 2, "10GbE", ("ring", "halving_doubling")) == "ring"  # a tie: first listed


def test_allreduce_vs_size_lines():
    from commlab.net import cost

    sizes = (1.0, 1e3, 1e6)
    ax = ch02.allreduce_vs_size(8, "100GbIB", sizes=sizes, mark=1e3)
    lines = ax.get_lines()
    assert [l.get_label() for l in lines[:5]] == list(ch02.ALLREDUCE_ALGORITHMS)
    assert list(lines[1].get_ydata()) == pytest.approx([ring_cost(n, 8, "100GbIB") for n in sizes])
    assert len(lines) == 6 and list(lines[5].get_xdata()) == [1e3, 1e3]  # the marked size
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "N = 8" in ax.get_title() and "100GbIB" in ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1 B", "1 kB", "1 MB"]


def test_allreduce_winner_map_cells():
    worlds, sizes, algs = (2, 4, 6), (1.0, 1e9), ("ring", "double_tree", "halving_doubling")
    ax = ch02.allreduce_winner_map("10GbE", worlds=worlds, sizes=sizes, algorithms=algs)
    cells = ax.collections[0].get_array().reshape(len(worlds), len(sizes))
    want = [[algs.index(ch02.allreduce_winner(n, p, "10GbE", algs)) for n in sizes] for p in worlds]
    assert cells.tolist() == want
    assert [t.get_text() for t in ax.get_yticklabels()] == ["2", "4", "6"]
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {algs[k] for row in want for k in row}
    assert "10GbE" in ax.get_title() and ax.get_xlabel() and ax.get_ylabel()


def test_allreduce_bars():
    from commlab.net import cost

    ax = ch02.allreduce_bars(1e8, 64, "10GbE", group_size=8)
    algs = ch02.ALLREDUCE_ALGORITHMS + ("hierarchical",)
    assert len(ax.patches) == len(algs)
    heights = [b.get_width() for b in ax.patches]
    assert heights[1] == pytest.approx(ring_cost(1e8, 64, "10GbE") * 1e3)
    assert heights[-1] == pytest.approx(
        hierarchical_cost(1e8, 64, "10GbE", group_size=8, intra_link="NVLink") * 1e3)
    labels = [t.get_text() for t in ax.texts]
    assert sum("(fastest)" in t for t in labels) == 1 and "10.1 s" in labels[0]
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "hierarchical (8/node)"
    assert "100 MB on N = 64" in ax.get_title() and ax.get_xlabel()


def test_ring_chunks_figure():
    masks = [[[1, 0], [0, 2]], [[1, 2], [0, 2]], [[3, 2], [1, 3]]]  # 2 ranks, 2 chunks, 3 frames
    axes = ch02.ring_chunks_figure(masks, titles=["a", "b", "c"])
    assert len(axes) == 3 and [ax.get_title() for ax in axes] == ["a", "b", "c"]
    assert [t.get_text() for t in axes[2].texts] == ["01", "1", "0", "01"]
    assert len(axes[0].patches) == 0 and len(axes[1].patches) == 1 and len(axes[2].patches) == 3  # changed cells
    assert axes[0].images[0].get_array().tolist() == [[1, 0], [0, 1]]  # contributions counted
    assert axes[0].get_xlabel() == "chunk" and axes[0].get_ylabel() == "rank"


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_allreduce_explorer_headless():
    w = pytest.importorskip("ipywidgets")
    ui = ch02.allreduce_explorer(nbytes=4e6, p=16, link="100GbIB", group_size=4)
    assert isinstance(ui, w.VBox)
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values["message MB"] == pytest.approx(4)
    assert values["ranks N"] == 16 and values["network"] == "100GbIB" and values["ranks/node"] == 4
    bars, curves = ui.shown.axes
    assert len(bars.patches) == 6 and "4 MB on N = 16" in bars.get_title()
    assert [l.get_label() for l in curves.get_lines()][:5] == ["naive", "ring", "tree", "double_tree",
                                                                "halving_doubling"]
    ranks = next(c for c in ui.children if getattr(c, "description", "") == "ranks N")
    before = len(plt.get_fignums())
    ranks.value = 8
    assert len(plt.get_fignums()) == before  # redrawn in place, and closed once shown
    assert "N = 8" in ui.shown.axes[1].get_title()


def test_agree_every_algorithm_gives_gloos_own_sum_in_fresh_processes():
    from commlab import launch

    results = launch(ch02.agree, 4, runtime="gloo", args=(101,), start_method="forkserver")
    expected = (torch.arange(101, dtype=torch.float32) * 10).tolist()
    assert all(r == results[0] for r in results)
    assert all(v == expected for v in results[0].values()) and "native" in results[0]
