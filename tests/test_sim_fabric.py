"""commlab.sim.fabric and commlab.sim.flows: the builders' shapes and routes, the flow-level
checks of the issue (one flow, k flows, a ring on a non-blocking fat-tree, 2:1 oversubscription)
and the refusals."""
import time

import pytest

from commlab.arch import ring
from commlab.net.link import LinkModel
from commlab.sim.fabric import bcube, fat_tree, torus_2d
from commlab.sim.flows import max_min_rates, ring_allreduce, simulate

LINK = LinkModel(5e-6, 1 / 10e9)  # 5 us, 10 GB/s
N = 4_000_000


def test_fat_tree_shape_and_routes():
    f = fat_tree(4, LINK)
    assert len(f.hosts) == 16 and len(f.switches) == 4 * 2 + 4 * 2 + 4
    assert len(f.path(0, 1)) == 2          # same edge switch
    assert len(f.path(0, 2)) == 4          # same pod, through an aggregation switch
    assert len(f.path(0, 15)) == 6         # another pod, through a core switch
    assert f.path(0, 15) == f.path(0, 15)  # deterministic


def test_bcube_and_torus_shapes():
    b = bcube(4, 1, LINK)
    assert len(b.hosts) == 16 and len(b.switches) == 2 * 4
    assert len(b.path(0, 1)) == 2 and len(b.path(0, 5)) == 4   # one digit differs / two digits differ
    t = torus_2d(4, 4, LINK)
    assert len(t.hosts) == 16 and not t.switches and len(t.path(0, 10)) == 4


def test_one_flow_is_alpha_plus_n_beta():
    f = fat_tree(4, LINK)
    assert simulate(f, [(0, 15, N, 0.0)]) == [pytest.approx(LINK.time(N))]


def test_k_flows_on_one_link_get_one_kth_each():
    f = fat_tree(4, LINK)
    for k in (2, 3):
        done = simulate(f, [(src, 0, N, 0.0) for src in range(1, k + 1)])  # all into host 0's link
        assert done == [pytest.approx(LINK.alpha + k * N * LINK.beta)] * k
    assert max_min_rates([[("a", "b")], [("a", "b"), ("b", "c")]], {("a", "b"): 10.0, ("b", "c"): 2.0}) == [8.0, 2.0]


def test_a_late_flow_slows_the_first_only_while_both_run():
    f = fat_tree(4, LINK)
    half = N * LINK.beta / 2
    first, second = simulate(f, [(1, 0, N, 0.0), (2, 0, N, half)])
    # half the bytes alone, the other half at half rate (N beta), then the second finishes alone
    assert first == pytest.approx(LINK.alpha + half + N * LINK.beta)
    assert second == pytest.approx(LINK.alpha + 2 * N * LINK.beta)


@pytest.mark.parametrize("k", [4, 8])
def test_ring_on_a_non_blocking_fat_tree_is_the_closed_form(k):
    f = fat_tree(k, LINK)
    p = len(f.hosts)
    assert ring_allreduce(f, N) == pytest.approx(ring.cost(N, p, LINK))


def test_two_to_one_oversubscription_halves_cross_rack_bandwidth():
    full, over = fat_tree(4, LINK), fat_tree(4, LINK, oversubscription=2)
    cross = [(0, 2, N, 0.0), (1, 3, N, 0.0)]   # both hosts of rack 0 to rack 1
    inside = [(0, 1, N, 0.0)]
    transfer = lambda fab, flows: max(simulate(fab, flows)) - LINK.alpha  # noqa: E731
    assert transfer(over, cross) == pytest.approx(2 * transfer(full, cross))
    assert transfer(over, inside) == pytest.approx(transfer(full, inside))


def test_a_ring_step_of_1024_gpus_is_fast():
    f = fat_tree(16, LINK)
    start = time.perf_counter()
    assert ring_allreduce(f, N) == pytest.approx(ring.cost(N, 1024, LINK))
    assert time.perf_counter() - start < 30  # the target, 5 s, is measured by benchmarks/, not here


@pytest.mark.parametrize("call, words", [
    (lambda: fat_tree(5), ["k=5", "even"]),
    (lambda: fat_tree(4, oversubscription=0.5), ["oversubscription=0.5", ">= 1"]),
    (lambda: bcube(1, 1), ["n=1", "n^(k+1)"]),
    (lambda: torus_2d(2, 4), ["a=2", ">= 3"]),
    (lambda: fat_tree(4).path(0, 16), ["16", "0..15"]),
])
def test_bad_input_names_the_valid_choices(call, words):
    with pytest.raises(ValueError) as e:
        call()
    for w in words:
        assert w in str(e.value)
