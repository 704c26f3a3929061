"""commlab.sim.grace: GRACE's measured grid read as released, every cell with a counterpart
predicted from the one-worker run alone, GRACE's methods mapped to ours as stated (error
feedback added where ours has none of its own, said where it cannot be), the rest left out by
name, and the summary's counts consistent with the table."""
import math

import pytest

from commlab.sim import grace


@pytest.fixture(scope="module")
def table():
    return grace.compare()


def test_the_grid_is_the_released_one():
    cells = grace.grid()
    assert set(cells.gbits) == {1.0, 10.0, 25.0}
    assert cells.runs.sum() == 180 and len(cells) == 145  # 180 runs on 8 workers; a few configurations ran 2-3 times
    assert set(cells[cells.runs > 1].method) == {"qsgd", "sketch", "threshold"}
    assert math.isclose(grace.single(), 409.4513, rel_tol=1e-6)
    assert "Horovod over MPI" in grace.about()["setting"]


def test_only_the_one_worker_run_sets_the_step():
    prof = grace.v100_profile()
    assert math.isclose(sum(prof.forward_s) + sum(prof.backward_s), 64 / grace.single(), rel_tol=1e-9)


def test_methods_map_to_ours_as_stated():
    assert grace.spec_of("topk", 0.01, True) == ("topk(0.01)+ef", "")
    assert grace.spec_of("randomk", 0.25, False) == ("randk(0.25)", "")
    assert grace.spec_of("dgc", 0.1, True) == ("dgc(ratio=0.1)", "")   # DGC keeps its own residual
    spec, note = grace.spec_of("terngrad", float("nan"), True)
    assert spec == "terngrad(coding='bytes')" and note.startswith("error feedback not modelled")
    assert grace.spec_of("none", float("nan"), None) == (None, "")
    # as GRACE's code sends them: a byte per sign, PowerSGD at rank 1 on TensorFlow's layout
    assert grace.spec_of("signsgd", float("nan"), True) == ("signsgd(coding='bytes')+ef", "")
    assert grace.spec_of("onebit", float("nan"), True) == ("onebit(coding='bytes')+ef", "")
    assert grace.spec_of("powersgd", float("nan"), True) == ("powersgd(rank=1, layout='tensorflow')", "")
    assert grace.spec_of("signsgd", float("nan"), False, grace.LIBRARY_SPECS) == ("signsgd", "")
    with pytest.raises(KeyError):
        grace.spec_of("sketch", float("nan"), False)


def test_every_matched_cell_is_predicted_and_summarised(table):
    assert not set(grace.UNMATCHED) & set(table.method)
    grid = grace.grid()
    assert len(table) == (~grid.method.isin(list(grace.UNMATCHED))).sum() == 108
    assert (table.predicted > 0).all() and table.error.notna().all()
    none = table[table.method == "none"]
    assert (none.measured_speedup == 1).all() and (none.predicted_speedup == 1).all()
    summary = grace.summary(table)
    assert summary.loc["all", "cells"] == len(table) - 3
    compressed = table[table.method != "none"]
    right = ((compressed.measured_speedup > 1) == (compressed.predicted_speedup > 1)).sum()
    assert summary.loc["all", "right_side"] == right
    assert 0 < summary.loc[10.0, "its_measured_share"] <= 1
    assert set(grace.by_family(table).index) == {"sparsification", "quantization", "sign", "low rank"}


def test_a_second_interface_is_a_hypothesis_said_as_one():
    from commlab.net import protocols
    assert grace.testbed(1.0).inter.beta == protocols.tcp(1.0).link().beta          # the model: one interface
    assert grace.testbed(1.0, 1.0).inter.beta == protocols.tcp(2.0).link().beta     # striped over two
    none = lambda t: t[(t.method == "none") & (t.gbits == 1.0)].predicted.iloc[0]  # noqa: E731
    assert none(grace.compare(second_gbits=1.0)) > 1.5 * none(grace.compare())


def test_the_rate_an_uncompressed_run_implies_reproduces_it():
    from commlab.net.link import LinkModel
    from commlab.sim import Cluster, iteration

    def predicted(gbits):  # the model's uncompressed throughput on one link of ``gbits`` per node
        link = LinkModel(25e-6, 8 / (gbits * 1e9))   # the closed form, not LinkModel.of_rate: an oracle
        cluster = Cluster(grace.WORKERS, 1, inter=link)
        return iteration(grace.v100_profile(), cluster, framework="horovod-mpi").throughput

    rate = grace.uncompressed_rate(10.0)
    measured = grace.grid().query("gbits == 10 and method == 'none'").images_per_s.iloc[0]
    assert predicted(rate * 0.999) <= measured <= predicted(rate * 1.001)   # Horovod's cycles make it a staircase
    assert grace.uncompressed_rate(1.0) > 1.0                                  # faster than 1 Gb/s allows
    assert grace.uncompressed_rate(1.0, high=0.5) == math.inf and grace.uncompressed_rate(25.0, low=20.0) == 20.0
    with pytest.raises(ValueError, match="no uncompressed run at gbits=40; it has 1, 10 and 25"):
        grace.uncompressed_rate(40)
