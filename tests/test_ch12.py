"""Chapter 12's helpers: the rates beside the shipped penalties, the taxonomy table and figure, the
MLP's profile at the Trainer's clock, and the agreement table's shape (headless)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from commlab.chapters import ch12  # noqa: E402
from commlab.advisor import penalties  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_rates_table_covers_every_measured_option_on_both_problems():
    t = ch12.rates_table()
    assert list(t.index) == list(penalties.OPTIONS)
    for problem in penalties.PROBLEMS:
        assert t.loc["bsp", f"{problem} penalty"] == 1 and t.loc["bsp", f"{problem} lr"] in penalties.LRS
    assert (t["ranked by"].dropna() >= 1).all()
    low, high = ch12.penalty_range()
    assert low == t[[f"{p} penalty" for p in penalties.PROBLEMS]].drop(index="bsp").min().min()
    assert high == t[[f"{p} penalty" for p in penalties.PROBLEMS]].drop(index="bsp").max().max()


def test_notation_is_the_books():
    text = " ".join(" ".join(r) for r in ch12.RATES.values())
    assert "rho" not in text  # rho is a sparsifier's density only; the spectral gap is delta
    assert "delta" in ch12.RATES["dpsgd"][0] and "omega" in ch12.RATES["topk(0.01)+ef"][0]
    assert "theta" in ch12.RATES["qsgd(levels=16)"][0]


def test_taxonomy_combined_is_never_worse_and_the_figure_draws():
    t = ch12.taxonomy(nodes=2, gpus_per_node=4, target=100)
    hours = t["hours"]
    for net in ch12.NETWORKS:
        assert hours[(net, "all combined")] <= hours[net].min() + 1e-12
        assert hours[(net, "BSP, ring")] >= hours[net].max() - 1e-12
    ax = ch12.taxonomy_figure(t)
    assert len(ax.patches) == len(ch12.NETWORKS) * len(ch12.DIMENSIONS)
    assert ax.figure.get_size_inches()[0] <= 6.9  # a 688-pixel web column at 100 dpi


def test_mlp_profile_matches_the_trainers_compute():
    from commlab.train import Trainer

    prof = ch12.mlp_profile()
    trainer = Trainer(**{**ch12.TRAINER, "workers": 1})
    assert sum(prof.forward_s) + sum(prof.backward_s) == pytest.approx(
        trainer.flops_per_sample * ch12.TRAINER["batch_size"] / 1e12, rel=0.05)
    assert sum(prof.grad_bytes) == 4 * trainer.num_params


def test_horizon_table_and_figure():
    from commlab.advisor import horizon

    t = ch12.horizon_table()
    assert list(t.columns[:4]) == [f"digits-cnn to {x:g}" for x in horizon.TARGETS]
    assert (t.loc["bsp"] == 1).all()
    assert t.loc["topk(0.01)+ef"].iloc[:4].notna().all() and t.loc["topk(0.01)"].iloc[3] != t.loc["topk(0.01)"].iloc[3]
    ax = ch12.horizon_figure()
    assert len(ax.lines) == len(horizon.OPTIONS) - 1 + 1  # one per option, and the line at 1
