"""sim.cluster: nodes, GPUs, links and clear errors."""
import pytest

from commlab.net.link import LinkModel
from commlab.net.link import PROFILES as LINKS
from commlab.sim import Cluster


def test_shape_and_links():
    c = Cluster(8, 4, intra="PCIe3-mgwfbp", inter="10GbE-mgwfbp")
    assert c.gpus == 32 and c.node_of(0) == 0 and c.node_of(7) == 1 and c.node_of(31) == 7
    assert c.intra is LINKS["PCIe3-mgwfbp"] and c.inter is LINKS["10GbE-mgwfbp"]
    assert c.links() == [c.intra, c.inter]
    assert "8 node(s) x 4 GPUs" in str(c) and "32 GPUs" in str(c)


def test_one_level_clusters_cross_one_kind_of_hop():
    assert Cluster(1, 8).links() == [LINKS["PCIe3-mgwfbp"]]
    flat = Cluster.flat(16, "10GbE")
    assert flat.gpus == 16 and flat.gpus_per_node == 1 and flat.links() == [flat.inter]
    assert flat.inter.name == "10GbE"
    assert Cluster(1, 1).links() == []


def test_a_link_model_is_kept():
    l = LinkModel(1e-6, 1e-10, "mine")
    assert Cluster(2, 2, intra=l, inter=l).intra is l


@pytest.mark.parametrize("kwargs,match", [
    ({"nodes": 0}, "nodes must be an integer >= 1, got 0"),
    ({"nodes": 2.5}, "nodes must be an integer >= 1, got 2.5"),
    ({"nodes": True}, "nodes must be an integer >= 1, got True"),
    ({"nodes": 2, "gpus_per_node": 0}, "gpus_per_node must be an integer >= 1, got 0"),
    ({"nodes": 2, "inter": "carrier-pigeon"}, "unknown link 'carrier-pigeon'; valid: .*100GbIB-survey"),
    ({"nodes": 2, "allreduce": "tree"}, "allreduce='tree'; valid: ring, hierarchical, nccl"),
])
def test_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Cluster(**kwargs)
