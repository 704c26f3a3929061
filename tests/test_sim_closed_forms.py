"""sim.closed_forms: the closed forms on a cluster, against formulas written out here."""
import pytest

from commlab.net.link import LinkModel
from commlab.sim import Cluster, comm_time
from commlab.arch import ring
from commlab.sim import closed_forms as col

INTRA = LinkModel(7e-6, 1 / 7e9, "intra")
INTER = LinkModel(30e-6, 1 / 1.25e9, "inter")
N_BYTES = [0, 4, 1e6, 1.34e9]


def T(link, m):
    return link.alpha + m * link.beta


@pytest.mark.parametrize("p", [2, 3, 16, 1024])
@pytest.mark.parametrize("n", N_BYTES)
def test_flat_ring(p, n):
    c = Cluster.flat(p, INTER)
    expected = 2 * (p - 1) * INTER.alpha + 2 * (p - 1) / p * n * INTER.beta
    assert col.allreduce_seconds(n, c) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("nodes,g", [(1, 4), (2, 4), (8, 4), (3, 2)])
@pytest.mark.parametrize("n", N_BYTES)
def test_two_level_ring_goes_at_its_slowest_hop(nodes, g, n):
    c = Cluster(nodes, g, intra=INTRA, inter=INTER)
    p = nodes * g
    hops = [T(INTRA, n / p)] + ([T(INTER, n / p)] if nodes > 1 else [])
    assert col.allreduce_seconds(n, c) == pytest.approx(2 * (p - 1) * max(hops), rel=1e-12)


@pytest.mark.parametrize("nodes,g", [(1, 4), (2, 4), (8, 4), (4, 1)])
def test_hierarchical(nodes, g):
    n = 1e7
    c = Cluster(nodes, g, intra=INTRA, inter=INTER, allreduce="hierarchical")
    expected = 2 * (g - 1) * T(INTRA, n) + 2 * (nodes - 1) * T(INTER, n / nodes)
    assert col.allreduce_seconds(n, c) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("nodes,g,s", [(4, 1, 4), (4, 1, 2), (2, 1, 5), (8, 4, 8), (3, 2, 1)])
def test_ps(nodes, g, s):
    n = 1e7
    c = Cluster(nodes, g, intra=INTRA, inter=INTER)
    expected = 2 * (g - 1) * T(INTRA, n / g) + 2 * max(nodes, s) * T(INTER, n / s)
    assert col.ps_seconds(n, c, s) == pytest.approx(expected, rel=1e-12)
    assert col.ps_seconds(n, c) == col.ps_seconds(n, c, nodes)  # one server per worker node by default


def test_ps_on_one_node_uses_no_server():
    c = Cluster(1, 4, intra=INTRA, inter=INTER)
    assert col.ps_seconds(1e7, c, 3) == pytest.approx(2 * 3 * T(INTRA, 1e7 / 4))


def test_one_gpu_sends_nothing():
    c = Cluster(1, 1)
    assert col.allreduce_seconds(1e9, c) == 0 and col.ps_seconds(1e9, c) == 0


def test_comm_time_and_bad_values():
    c = Cluster(2, 2)
    assert comm_time(c)(1e6) == col.allreduce_seconds(1e6, c)
    assert comm_time(c, "ps", 3)(1e6) == col.ps_seconds(1e6, c, 3)
    with pytest.raises(ValueError, match="unknown arch 'gossip'; valid: allreduce, ps, byteps"):
        comm_time(c, "gossip")
    with pytest.raises(ValueError, match="servers=2 applies to arch='ps' only"):
        comm_time(c, "allreduce", 2)
    with pytest.raises(ValueError, match="needs servers to be an integer >= 1.*got 0"):
        comm_time(c, "ps", 0)


def test_nccl_takes_the_faster_of_ring_and_tree():
    c = Cluster(8, 4, intra=INTRA, inter=INTER, allreduce="nccl")
    ring_c = Cluster(8, 4, intra=INTRA, inter=INTER)
    depth = 3 * INTRA.alpha + 3 * INTER.alpha  # a chain of 4 GPUs, a tree of depth log2(8) = 3
    for n in (1e3, 1e5, 1e7, 1e9):
        tree = 2 * depth + 2 * n * max(INTRA.beta, INTER.beta)
        assert col.tree_seconds(n, c) == pytest.approx(tree, rel=1e-12)
        assert col.allreduce_seconds(n, c) == pytest.approx(min(tree, col.allreduce_seconds(n, ring_c)), rel=1e-12)
    assert col.allreduce_seconds(1e3, c) < col.allreduce_seconds(1e3, ring_c)  # small: the tree's log-depth latency
    assert col.allreduce_seconds(1e9, c) == col.allreduce_seconds(1e9, ring_c)  # large: the ring's bandwidth
    one_node = Cluster(1, 4, intra=INTRA, allreduce="nccl")
    assert col.allreduce_seconds(1e3, one_node) == col.allreduce_seconds(1e3, Cluster(1, 4, intra=INTRA))


def test_byteps_pipelines_its_partitions():
    c = Cluster(4, 4, intra=INTRA, inter=INTER)
    node = ring.cost(1e8, 4, INTRA) - 6 * INTRA.alpha
    wire = 4 * 1e8 / 4 * INTER.beta  # the busiest NIC: max(N, S) n / S bytes each way
    assert col.byteps_seconds(1e8, c) == pytest.approx(max(node, wire) + 2 * INTER.alpha, rel=1e-12)
    assert col.byteps_seconds(1e8, c, 2) == pytest.approx(max(node, 4 * 1e8 / 2 * INTER.beta) + 2 * INTER.alpha)
    assert col.byteps_seconds(1e8, c) < col.ps_seconds(1e8, c)  # push and pull overlap on full-duplex NICs
    assert col.byteps_seconds(1e8, Cluster(1, 4, intra=INTRA)) == col.ps_seconds(1e8, Cluster(1, 4, intra=INTRA))
    assert comm_time(c, "byteps")(1e6) == col.byteps_seconds(1e6, c)
