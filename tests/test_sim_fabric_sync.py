"""commlab.sim.fabric_sync: each algorithm against its closed form on the fabric it suits, and
the orderings the chapter relies on (rails beat the leader by g, BML beats a fat-tree PS by k+1)."""
import pytest

from commlab.net.link import LinkModel
from commlab.sim import fabric_sync as fs
from commlab.sim.fabric import bcube, fat_tree
from commlab.sim.gpu_fabric import gpu_cluster

NIC = LinkModel(2e-6, 1 / 25e9)
NVL = LinkModel(3e-6, 1 / 300e9)
N = 64e6


def _intra(g, n=N):
    return 2 * (g - 1) * (NIC.alpha + n / g / 300e9)  # a fabric has one start-up, the network's


def test_flat_ring_is_bound_by_the_nic_hop():
    f = gpu_cluster(4, 4, "nvswitch", "tor", link=NIC, nvlink=NVL)
    assert fs.flat_ring(f, N) == pytest.approx(2 * 15 * (NIC.alpha + N / 16 / 25e9))


def test_rail_allreduce_is_g_times_faster_across_nodes_only_with_rails():
    g, nodes = 8, 4
    inter = lambda n: 2 * (nodes - 1) * (NIC.alpha + n / nodes / 25e9)  # noqa: E731
    rails = gpu_cluster(nodes, g, "nvswitch", "rails", link=NIC, nvlink=NVL)
    tor = gpu_cluster(nodes, g, "nvswitch", "tor", link=NIC, nvlink=NVL)
    assert fs.rail_allreduce(rails, N, g) == pytest.approx(_intra(g) + inter(N / g))
    leader = fs.leader_allreduce(rails, N, g)
    assert leader > inter(N) and fs.rail_allreduce(rails, N, g) < leader / 3
    # g rings through one NIC share it: no better than the leader's one ring across nodes
    assert fs.rail_allreduce(tor, N, g) == pytest.approx(_intra(g) + 2 * (nodes - 1) * (NIC.alpha + N / nodes / 25e9),
                                                         rel=0.01)


def test_ps_on_a_fat_tree_is_the_nic_bound_and_bml_uses_every_nic():
    for n, k, ft in ((4, 1, 4), (4, 2, 8)):
        hosts = n ** (k + 1)
        nic = 1 / fat_tree(ft).capacity[next(iter(fat_tree(ft).capacity))]
        ps = fs.ps_sync(fat_tree(ft), N, range(hosts))
        bml = fs.bml_sync(bcube(n, k), N, n, k)
        alpha = fat_tree(ft).alpha
        assert ps == pytest.approx(2 * (alpha + (hosts - 1) / hosts * N * nic), rel=1e-3)
        assert bml == pytest.approx(2 * (k + 1) * alpha + 2 * (hosts - 1) / hosts * N * nic / (k + 1), rel=1e-3)
        assert ps / bml == pytest.approx(k + 1, rel=0.01)


def test_refusals():
    f = gpu_cluster(2, 4, link=NIC, nvlink=NVL)
    with pytest.raises(ValueError, match="gpus_per_node=3 must divide the fabric's 8 GPUs"):
        fs.rail_allreduce(f, N, 3)
    with pytest.raises(ValueError, match=r"BCube\(4, 1\) has n\^\(k\+1\) = 16 hosts, the fabric has 64"):
        fs.bml_sync(bcube(4, 2), N, 4, 1)
    assert fs.phase(f, []) == 0.0
