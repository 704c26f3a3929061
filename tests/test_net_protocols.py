"""commlab.net.protocols: the link a protocol gives, its CPU cost, the names the simulator's links
accept, and the survey's ordering of the same job on RDMA, 100GbE TCP and 10GbE."""
import pytest

from commlab import sim
from commlab.net.link import get_link as link
from commlab.net.protocols import PROTOCOLS, Protocol, protocol


def test_link_is_latency_plus_wire_plus_copies():
    tcp = PROTOCOLS["tcp-100GbE"]
    assert tcp.link().alpha == 25e-6
    assert tcp.link().beta == pytest.approx(8 / (100e9 * 1448 / 1538) + 2 / 10e9)
    assert tcp.cpu_seconds(1e9) == pytest.approx(0.2) and PROTOCOLS["rdma-100GbIB"].cpu_seconds(1e9) == 0
    assert PROTOCOLS["rdma-100GbIB"].gbytes_per_s == pytest.approx(12.5)
    assert link("tcp-10GbE").beta == PROTOCOLS["tcp-10GbE"].link().beta  # the simulator takes the names


def test_same_job_scales_best_on_rdma_then_tcp_100_then_tcp_10():
    def efficiency(name, nodes=16):
        return sim.iteration("resnet50", sim.Cluster(nodes, 4, inter=name), method="wfbp_a2a",
                             framework="ideal").speedup / (nodes * 4)
    rdma, tcp100, tcp10 = (efficiency(n) for n in ("rdma-100GbIB", "tcp-100GbE", "tcp-10GbE"))
    assert rdma > tcp100 > tcp10 and rdma > 0.95 and tcp10 < 0.5


def test_refusals():
    assert protocol(PROTOCOLS["tcp-10GbE"]) is PROTOCOLS["tcp-10GbE"]
    with pytest.raises(ValueError, match="unknown protocol 'udp'; valid: rdma-100GbIB, rdma-100GbE, tcp-100GbE, tcp-25GbE, tcp-10GbE, tcp-1GbE"):
        protocol("udp")
    assert isinstance(Protocol("x", 1, 1e-6), Protocol)


def test_tcp_on_1_10_25_100_gbe():
    """Every TCP link is framing-limited data on the wire in series with two copies: on 1GbE the
    wire decides (0.92 of the 0.94 Gb/s framing leaves), on 25GbE and above the copying core."""
    rates = {n: 8 * PROTOCOLS[f"tcp-{n}GbE"].gbytes_per_s for n in (1, 10, 25, 100)}
    assert rates[1] == pytest.approx(1 / (1538 / 1448 + 2 / 10e9 * 1e9 / 8))  # Gb/s: framing, then two copies at 10 GB/s
    assert 0.9 < rates[1] < 0.9415 and 7 < rates[10] < 8 and 14 < rates[25] < 16 and 25 < rates[100] < 40
    for n in (1, 25):
        assert link(f"tcp-{n}GbE") == PROTOCOLS[f"tcp-{n}GbE"].link()
