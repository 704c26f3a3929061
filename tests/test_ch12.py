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


def test_rates_table_covers_every_measured_option():
    t = ch12.rates_table()
    assert list(t.index) == list(penalties.OPTIONS)
    assert t.loc["bsp", "penalty (measured)"] == 1


def test_taxonomy_combined_is_never_worse_and_the_figure_draws():
    t = ch12.taxonomy(nodes=2, gpus_per_node=4, target=100)
    hours = t["hours"]
    for net in ch12.NETWORKS:
        assert hours[(net, "all combined")] <= hours[net].min() + 1e-12
        assert hours[(net, "BSP, ring")] >= hours[net].max() - 1e-12
    ax = ch12.taxonomy_figure(t)
    assert len(ax.patches) == len(ch12.NETWORKS) * len(ch12.DIMENSIONS)


def test_mlp_profile_matches_the_trainers_compute():
    from commlab.train import Trainer

    prof = ch12.mlp_profile()
    trainer = Trainer(**{**ch12.TRAINER, "workers": 1})
    assert sum(prof.forward_s) + sum(prof.backward_s) == pytest.approx(
        trainer.flops_per_sample * ch12.TRAINER["batch_size"] / 1e12, rel=0.05)
    assert sum(prof.grad_bytes) == 4 * trainer.num_params
