"""sim.programs: every point-to-point message of a collective, timed, equals the closed forms."""
import pytest

from commlab.arch import ring as ring_mod
from commlab.arch.ps_layout import ps_sharded
from commlab.net.link import LinkModel
from commlab.sim import Cluster
from commlab.sim import closed_forms as col
from commlab.sim.programs import simulate

INTRA = LinkModel(7e-6, 1 / 7e9, "intra")
INTER = LinkModel(30e-6, 1 / 1.25e9, "inter")


def one(cluster, n, arch="allreduce", servers=0):
    (times, p2p, events) = simulate(cluster, [n], [0.0], arch, servers)
    return times[0][1], p2p


@pytest.mark.parametrize("p", [2, 3, 8, 17])
@pytest.mark.parametrize("n", [4, 1e6, 3e8])
def test_flat_ring_equals_its_closed_form(p, n):
    end, p2p = one(Cluster.flat(p, INTER), n)
    assert end == pytest.approx(ring_mod.cost(n, p, INTER), rel=1e-9)
    assert p2p == 2 * (p - 1) * p


@pytest.mark.parametrize("nodes,g", [(2, 4), (4, 4), (3, 2), (1, 8)])
def test_two_level_ring_within_one_percent(nodes, g):
    c = Cluster(nodes, g, intra=INTRA, inter=INTER)
    for n in (1e4, 1e7):
        end, _ = one(c, n)
        assert end == pytest.approx(col.allreduce_seconds(n, c), rel=0.01)


@pytest.mark.parametrize("nodes,g", [(2, 4), (4, 1), (1, 4), (3, 3)])
def test_hierarchical_equals_its_closed_form(nodes, g):
    c = Cluster(nodes, g, intra=INTRA, inter=INTER, allreduce="hierarchical")
    end, p2p = one(c, 1e7)
    assert end == pytest.approx(col.allreduce_seconds(1e7, c), rel=1e-9)
    assert p2p == 2 * nodes * (g - 1) + 2 * (nodes - 1) * nodes * (nodes > 1)


@pytest.mark.parametrize("nodes,g,s", [(4, 1, 4), (4, 1, 2), (4, 2, 4), (1, 4, 1), (3, 2, 1), (5, 2, 3)])
def test_ps_equals_its_closed_form(nodes, g, s):
    c = Cluster(nodes, g, intra=INTRA, inter=INTER)
    end, p2p = one(c, 1e7, "ps", s)
    assert end == pytest.approx(col.ps_seconds(1e7, c, s), rel=1e-9)
    assert p2p == 2 * nodes * g * (g - 1) + (2 * nodes * s if nodes > 1 else 0)


def test_more_servers_than_workers_beats_the_staggered_bound():
    """ps_sharded's 2 max(p, S) T(n/S) takes each rank's messages in program order; the message
    level takes them as they come, so with S > p a worker's pulls overlap and it is faster."""
    c = Cluster.flat(2, INTER)
    end, _ = one(c, 1e7, "ps", 5)
    assert end < col.ps_seconds(1e7, c, 5)
    assert end >= (5 + 1) * INTER.time(1e7 / 5) - 1e-12  # 5 pieces out of a card, then one back at least


def test_a_lone_server_is_the_bottleneck():
    """With one server every push and pull queues at its card: 2 N T(n), growing with N."""
    ends = [one(Cluster.flat(w, INTER), 1e6, "ps", 1)[0] for w in (2, 4, 8)]
    assert ends == pytest.approx([ps_sharded(1e6, w, 1, INTER) for w in (2, 4, 8)], rel=1e-9)
    assert ends == pytest.approx([2 * w * INTER.time(1e6) for w in (2, 4, 8)], rel=1e-9)


def test_a_rank_runs_its_collectives_one_after_another():
    c = Cluster.flat(4, INTER)
    t = ring_mod.cost(1e6, 4, INTER)
    times, _, _ = simulate(c, [1e6, 1e6, 1e6], [0.0, 0.0, 10.0])
    assert [e for _, e in times] == pytest.approx([t, 2 * t, 10 + t])
    assert times[1][0] == pytest.approx(t)  # every rank is done with the first at t


def test_one_gpu_has_nothing_to_send():
    times, p2p, events = simulate(Cluster(1, 1), [1e6], [0.5])
    assert times == [(0.5, 0.5)] and p2p == events == 0
