"""Chapter 00's rank functions: the same results on threads and on Gloo processes, also when
the processes start fresh (as on a GPU server) and must import them by name."""
import pytest
import torch

from commlab import RankError, launch
from commlab.chapters import ch00


@pytest.mark.parametrize("start", [None, "forkserver"], ids=["default", "forkserver"])
def test_collectives_agree_on_threads_and_gloo(start):
    on_threads = launch(ch00.collectives, 4, runtime="threads")
    on_gloo = launch(ch00.collectives, 4, runtime="gloo", start_method=start)
    assert on_threads == on_gloo == [{"all_reduce(sum)": [10.0, 20.0, 30.0], "all_reduce(max)": 3.0,
                                      "all_gather": [0, 10, 20, 30], "broadcast from 1": [7.0, 8.0]}] * 4


@pytest.mark.parametrize("n", [1, 2, 5])
def test_ring_pass_is_an_all_gather(n):
    out = launch(lambda comm: ch00.ring_pass(comm, torch.tensor([float(comm.rank)])), n)
    assert all([t.item() for t in blocks] == list(range(n)) for blocks in out)


def test_ring_vs_native_counts_the_same_traffic_on_gloo():
    res = launch(ch00.ring_vs_native, 3, runtime="gloo", net="10GbE", start_method="forkserver")
    assert all(r["same"] and r["ring"] == r["native"] and r["ring"].bytes_sent == 2 * 1000 for r in res)


def test_fragile_names_rank_two():
    with pytest.raises(RankError) as info:
        launch(ch00.fragile, 4, runtime="gloo", start_method="forkserver")
    assert info.value.rank == 2 and "found a NaN in my gradient" in str(info.value)
