"""commlab.infra.placement: each policy's exact footprint on a hand-made free list, None when the
job does not fit, topology-aware placement staying in one rack; iteration times that grow with
nodes and racks (oversubscription), the documented approximation, the cache; refusals."""
import pytest

from commlab.infra import placement as pl
from commlab.infra.placement import (PLACEMENTS, Datacenter, consolidated, iteration_time, spread,
                                     topology_aware)
from commlab.net.link import LinkModel
from commlab.net.link import get_link as link

DC = Datacenter(2, 2, 4)      # nodes 0, 1 in rack 0; nodes 2, 3 in rack 1
FREE = [1, 3, 4, 2]


def test_datacenter_counts_and_cross_rack_link():
    dc = Datacenter(4, 4, 8)
    assert (dc.nodes, dc.gpus, dc.rack_of(5), dc.empty()) == (16, 128, 1, [8] * 16)
    ib = link("100GbIB-survey")
    x = dc.cross_rack()
    assert x.alpha == ib.alpha and x.beta == pytest.approx(4 * ib.beta)
    assert Datacenter(1, 1, 1, oversubscription=1).cross_rack().beta == ib.beta


def test_consolidated_is_first_fit_in_index_order():
    assert consolidated(FREE, DC, 3) == {0: 1, 1: 2}
    assert consolidated(FREE, DC, 5) == {0: 1, 1: 3, 2: 1}      # crosses racks
    assert consolidated(FREE, DC, 10) == {0: 1, 1: 3, 2: 4, 3: 2}


def test_spread_takes_one_gpu_per_node_most_free_first():
    assert spread(FREE, DC, 3) == {2: 1, 1: 1, 3: 1}
    assert spread(FREE, DC, 5) == {2: 2, 1: 1, 3: 1, 0: 1}       # a second pass starts at node 2
    assert spread(FREE, DC, 8) == {2: 3, 1: 2, 3: 2, 0: 1}
    assert spread([4, 4, 4, 4], DC, 4) == {0: 1, 1: 1, 2: 1, 3: 1}


def test_topology_aware_best_fit_node_then_one_rack_then_racks():
    assert topology_aware(FREE, DC, 3) == {1: 3}                 # best fit: node 1 (3 free), not node 2 (4)
    assert topology_aware(FREE, DC, 1) == {0: 1}
    assert topology_aware([4, 2, 4, 3], DC, 2) == {1: 2}         # not the first node that fits
    assert topology_aware([4, 2, 4, 3], DC, 3) == {3: 3}
    assert topology_aware(FREE, DC, 5) == {2: 4, 3: 1}           # rack 1 holds it; consolidated crossed racks
    assert topology_aware(FREE, DC, 8) == {2: 4, 3: 2, 1: 2}     # no rack holds 8: fullest rack first
    # the rack needing the fewest nodes wins, even with fewer free GPUs in all
    assert topology_aware([3, 3, 3, 4, 4, 0], Datacenter(2, 3, 4), 7) == {3: 4, 4: 3}


def test_topology_aware_stays_in_one_rack_whenever_one_can_hold_the_job():
    dc = Datacenter(3, 3, 4)
    free = [2, 1, 3, 4, 0, 1, 2, 2, 2]
    for n in range(1, sum(free) + 1):
        where = topology_aware(free, dc, n)
        assert sum(where.values()) == n and all(where[i] <= free[i] for i in where)
        racks = {dc.rack_of(i) for i in where}
        fits = any(sum(free[r * 3:(r + 1) * 3]) >= n for r in range(3))
        if fits:
            assert len(racks) == 1, (n, where)
        else:
            assert len(racks) > 1


@pytest.mark.parametrize("name", list(PLACEMENTS))
def test_every_policy_returns_none_when_the_job_does_not_fit(name):
    policy = PLACEMENTS[name]
    assert policy(FREE, DC, 11) is None
    assert policy([0, 0, 0, 0], DC, 1) is None
    where = policy(FREE, DC, 10)
    assert where == {0: 1, 1: 3, 2: 4, 3: 2}


def test_iteration_time_grows_across_racks_and_with_nodes():
    dc = Datacenter(2, 4, 4, intra="NVLink")
    one = iteration_time("bert-large", {0: 4}, dc)
    two = iteration_time("bert-large", {0: 2, 1: 2}, dc)
    four = iteration_time("bert-large", {0: 1, 1: 1, 2: 1, 3: 1}, dc)
    racks = iteration_time("bert-large", {0: 2, 4: 2}, dc)
    assert one < two <= four < racks
    assert racks > 2 * two                                       # 4x oversubscription of the core
    flat = Datacenter(2, 4, 4, intra="NVLink", oversubscription=1.0)
    assert iteration_time("bert-large", {0: 2, 4: 2}, flat) == pytest.approx(two)
    assert iteration_time("bert-base", {0: 4, 2: 4}, DC) > iteration_time("bert-base", {0: 4, 1: 4}, DC)


def test_iteration_time_uses_the_fullest_node_and_is_cached():
    assert iteration_time("resnet50", {0: 3, 1: 1}, DC) == iteration_time("resnet50", {0: 3, 1: 3}, DC)
    before = pl._time.cache_info().hits
    iteration_time("resnet50", {1: 3, 0: 1}, DC)
    assert pl._time.cache_info().hits == before + 1
    custom = Datacenter(1, 2, 2, intra=LinkModel(1e-6, 1e-11, "fast"), inter="10GbE")
    assert iteration_time("resnet50", {0: 1, 1: 1}, custom) > iteration_time("resnet50", {0: 2}, custom)


def test_refusals():
    with pytest.raises(ValueError, match=r"oversubscription=0.5 must be a number >= 1"):
        Datacenter(1, 1, 1, oversubscription=0.5)
    with pytest.raises(ValueError, match=r"racks=0 must be an integer >= 1"):
        Datacenter(0, 1, 1)
    with pytest.raises(ValueError, match=r"gpus_per_node=2.5 must be an integer >= 1"):
        Datacenter(1, 1, 2.5)
    with pytest.raises(ValueError, match=r"inter='nope'.*unknown link"):
        Datacenter(1, 1, 1, inter="nope")
    with pytest.raises(ValueError, match=r"n=0 must be an integer >= 1"):
        consolidated(FREE, DC, 0)
    with pytest.raises(ValueError, match=r"must list 4 free-GPU counts, each in 0..4"):
        spread([1, 2, 3], DC, 1)
    with pytest.raises(ValueError, match=r"must list 4 free-GPU counts"):
        topology_aware([1, 2, 3, 5], DC, 1)
    with pytest.raises(ValueError, match=r"placement node 7 must be an integer in 0..3"):
        iteration_time("resnet50", {7: 1}, DC)
    with pytest.raises(ValueError, match=r"placement 0: 5 GPUs must be an integer in 1..4"):
        iteration_time("resnet50", {0: 5}, DC)
    with pytest.raises(ValueError, match=r"must be a non-empty dict"):
        iteration_time("resnet50", {}, DC)
