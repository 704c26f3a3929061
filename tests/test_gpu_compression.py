"""commlab.chapters.gpu_compression: chapter 07's predictions of compression on a GPU cluster."""
import math

import matplotlib
import pytest

matplotlib.use("Agg")

from commlab import sim  # noqa: E402
from commlab.chapters import gpu_compression as gpu  # noqa: E402
from commlab.net.link import get_link  # noqa: E402


def test_the_named_links_are_points_of_the_sweep():
    for g in gpu.NAMED:
        assert gpu.tcp(g).beta == pytest.approx(get_link(f"tcp-{g}GbE").beta)
        assert gpu.tcp(g).alpha == get_link(f"tcp-{g}GbE").alpha


def test_step_and_table_are_the_simulators():
    it = gpu.step("resnet50", "fp16", 10)
    direct = sim.iteration(sim.profile("resnet50", batch=64, device="v100"), sim.Cluster(8, 1, inter="tcp-10GbE"),
                           compress="fp16", framework="horovod")
    assert it.time == pytest.approx(direct.time, rel=1e-12)
    t = gpu.throughput_table("resnet50", specs=("fp16",), gbits=(1, 10))
    assert list(t.index) == ["none", "fp16"] and t.loc["fp16", "10 Gb/s"] == pytest.approx(it.throughput)


def test_breakeven_is_where_the_speedup_crosses_one():
    b = gpu.breakeven("resnet50", "topk(0.01)+ef")
    assert 1 < b < 100
    assert gpu.speedup("resnet50", "topk(0.01)+ef", b * 0.97) > 1 > gpu.speedup("resnet50", "topk(0.01)+ef", b * 1.03)
    assert gpu.breakeven("bert-base", "fp16") == math.inf  # halving BERT's 440 MB pays on every link here


def test_breakdown_adds_up_and_figures_draw():
    compute, arithmetic, exposed = gpu.breakdown("resnet50", "qsgd", 10)
    assert compute + arithmetic + exposed == pytest.approx(gpu.step("resnet50", "qsgd", 10).time)
    assert arithmetic > 0 and exposed >= 0
    axes = gpu.bandwidth_figure(models=("resnet50",), specs=("fp16", "qsgd"), points=3)
    assert len(axes[0].lines) == 2 + 1 + len(gpu.NAMED)
    ax = gpu.explorer_figure("bert-base", "fp16", 25)
    assert "speedup" in ax.get_title()
