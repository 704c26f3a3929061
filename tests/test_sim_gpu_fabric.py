"""commlab.sim.gpu_fabric: what is inside a node and how nodes reach the network, GPUs that never
relay, the registry of fabrics and its refusals."""
import pytest

from commlab.net.link import LinkModel
from commlab.sim.flows import simulate
from commlab.sim.gpu_fabric import FABRICS, build, gpu_cluster, switch_count

NIC = LinkModel(2e-6, 1 / 25e9)
NVL = LinkModel(3e-6, 1 / 300e9)
PCIE = LinkModel(5e-6, 1 / 12e9)


def test_nvswitch_rails_routes():
    f = gpu_cluster(2, 8, "nvswitch", "rails", link=NIC, nvlink=NVL)
    assert len(f.hosts) == 16 and switch_count(f) == 8 + 1  # 8 rails and a spine
    assert [e[1] for e in f.path(0, 1)] == [("nvswitch", 0), ("gpu", 0, 1)]      # inside the node
    assert [e[1][0] for e in f.path(0, 8)] == ["nic", "rail", "nic", "gpu"]     # same rail
    assert ("spine",) in [e[1] for e in f.path(0, 9)]                             # another rail
    assert all(v[0] != "gpu" or v == ("gpu", 1, 1) for _, v in f.path(0, 9))     # no GPU relays


def test_tor_shares_one_nic_and_pcie_tree_shares_the_root():
    f = gpu_cluster(2, 8, "nvswitch", "tor", link=NIC, nvlink=NVL)
    # eight GPUs of node 0 each send to their peer on node 1: all through node 0's one NIC
    t = simulate(f, [(i, 8 + i, 25e6, 0.0) for i in range(8)])
    assert max(t) == pytest.approx(NIC.alpha + 8 * 25e6 / 25e9)
    p = gpu_cluster(1, 8, "pcie", "tor", link=NIC, pcie=PCIE)
    assert len(p.path(0, 1)) == 2 and len(p.path(0, 2)) == 4  # same PCIe switch / across the root
    both = simulate(p, [(0, 2, 12e6, 0.0), (1, 4, 12e6, 0.0)])  # share pcie(0)->cpu
    assert max(both) == pytest.approx(NIC.alpha + 2 * 12e6 / 12e9)  # one start-up: the network's


def test_rails_give_every_gpu_its_own_nic():
    f = gpu_cluster(2, 8, "nvswitch", "rails", link=NIC, nvlink=NVL)
    t = simulate(f, [(i, 8 + i, 25e6, 0.0) for i in range(8)])
    assert max(t) == pytest.approx(NIC.alpha + 25e6 / 25e9)


def test_registry_and_refusals():
    assert set(FABRICS) == {"fat_tree", "bcube", "torus_2d", "gpu_cluster"}
    assert len(build("fat_tree", k=4).hosts) == 16
    with pytest.raises(ValueError, match="unknown fabric 'dragonfly'; valid: fat_tree, bcube, torus_2d, gpu_cluster"):
        build("dragonfly")
    with pytest.raises(ValueError, match="node='nvlink'; valid: nvswitch, pcie"):
        gpu_cluster(2, node="nvlink")
    with pytest.raises(ValueError, match="network='mesh'; valid: rails, tor"):
        gpu_cluster(2, network="mesh")
    with pytest.raises(ValueError, match="nodes=0 must be an integer >= 1"):
        gpu_cluster(0)
