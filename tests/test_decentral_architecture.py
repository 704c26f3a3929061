"""The gossip architecture and its exchange: registered as arch="gossip", its checks before any
rank starts, neighbours' values and compressed payloads with their real bytes, and the
off-the-record measurement of the average and the consensus distance."""
import math

import numpy as np
import pytest
import torch

from commlab import arch, compress, rules, sync
from commlab.config import Config
from commlab.decentral import topology as T
from commlab.decentral.architecture import Gossip, GossipExchange
from commlab.net import LinkModel, Network
from commlab.runtime import launch

L = LinkModel(alpha=1e-4, beta=1e-8, name="test")
N = 4096


def _x(rank, numel=6):
    return torch.randn(numel, generator=torch.Generator().manual_seed(rank), dtype=torch.float64)


def test_gossip_is_registered_with_the_decentralized_rules():
    assert isinstance(arch.get("gossip(topology='torus')"), Gossip)
    over_gossip = [n for n in sync.SYNCS.names() if "neighbours" in sync.get(n).needs]
    assert over_gossip == ["adpsgd", "choco", "dcd_psgd", "dpsgd", "ecd_psgd", "naive_gossip"]


def test_gossip_architecture():
    g = Gossip("random_regular", d=4, seed=1)
    assert g.name == "gossip" and repr(g) == "Gossip(topology='random_regular', d=4, seed=1)"
    assert g.topology_for(10) is g.topology_for(10) and set(g.topology_for(10).degrees) == {4}

    def body(comm):
        return Gossip("exponential").mix(comm, _x(comm.rank))

    out = torch.stack(launch(body, 6))
    x = torch.stack([_x(r) for r in range(6)])
    torch.testing.assert_close(out, torch.from_numpy(T.exponential(6).mixing_matrix()) @ x)
    with pytest.raises(ValueError, match="unknown topology 'mesh'; valid: ring, torus"):
        Gossip("mesh")
    with pytest.raises(ValueError, match="power of two"):
        Gossip("hypercube").topology_for(6)
    assert math.isclose(Gossip().time(N, 8, L), 2 * L.time(N))
    assert np.isclose(Gossip(T.star(4)).topology_for(4).spectral_gap(), 0.25)
    assert Gossip().world_size(5) == 5 and not Gossip().serves(4, 5)


def test_a_disconnected_graph_is_refused():
    two_pairs = T.Topology("pairs", [{1}, {0}, {3}, {2}])
    with pytest.raises(ValueError, match=r"disconnected: gossip could never .* valid: a connected graph"):
        Gossip(two_pairs).topology_for(4)


def test_declarations_and_the_rulebook_want_a_decentralized_sync_and_no_server_replies():
    g = Gossip()
    assert g.provides == {"neighbours"} and g.decodes == "each" and not g.replies and not g.schedulable
    c = Config(workers=4, sync="bsp", arch="gossip")
    with pytest.raises(ValueError, match=r"sync='bsp' averages each step's gradients, which arch='gossip' does not "
                                         r"offer; valid: arch=.*ring"):
        rules.check(c, sync.get("bsp"), g)
    c = Config(workers=4, sync="dpsgd", arch="gossip", reply_compress="fp16")
    with pytest.raises(ValueError, match="sync='dpsgd' sends its values exactly"):
        rules.check(c, sync.get("dpsgd"), g, None, compress.get("fp16"))
    c = Config(workers=4, sync="choco", arch="gossip", reply_compress="fp16")
    with pytest.raises(ValueError, match="arch='gossip' has none; valid: arch=ps"):
        rules.check(c, sync.get("choco"), g, None, compress.get("fp16"))
    with pytest.raises(ValueError, match="a 2-D torus needs n = rows x cols"):
        rules.check(Config(workers=7, sync="dpsgd", arch="gossip"), sync.get("dpsgd"), Gossip("torus"))


def _shared(comm, top, spec):
    ex = GossipExchange(comm, top, None if spec is None else compress.get(spec))
    x = _x(comm.rank, 1000).float()
    before = comm.stats.snapshot()
    own, got = ex.share_compressed(x)
    return own, got, comm.stats.snapshot() - before


@pytest.mark.parametrize("spec", [None, "topk(0.1)", "qsgd(levels=4)"])
def test_share_compressed_sends_one_payload_per_edge(spec):
    top = T.torus(9)
    out = launch(_shared, 9, args=(top, spec))
    c = None if spec is None else compress.get(spec)
    for i, (own, got, delta) in enumerate(out):
        assert sorted(got) == list(top.neighbors[i])
        for j, value in got.items():  # what i decoded of j equals what j decoded of itself
            torch.testing.assert_close(value, out[j][0])
        size = 4000 if c is None else c.compress(_x(i, 1000).float()).nbytes
        assert delta.bytes_sent == top.degrees[i] * size and delta.msgs_sent == top.degrees[i]


def _measured(comm):
    ex = GossipExchange(comm, T.ring(comm.world_size))
    x = _x(comm.rank, 50) * 1e3 + 7
    before, now = comm.stats.snapshot(), comm.now
    out = ex.measure(x, flag=float(comm.rank == 2))
    return out, comm.stats.snapshot() - before, comm.now - now


def test_measure_is_exact_and_off_the_record():
    out = launch(_measured, 5, net=Network(L))
    X = torch.stack([_x(r, 50) * 1e3 + 7 for r in range(5)])
    for (mean, distance, bad), delta, elapsed in out:
        torch.testing.assert_close(mean, X.mean(0))
        assert math.isnan(distance) and bad == [2]  # a flag makes the distance NaN and names the rank
        assert delta.bytes_sent == delta.bytes_recv == 0 and elapsed == 0.0

    def clean(comm):
        return GossipExchange(comm, T.ring(5)).measure(_x(comm.rank, 50) * 1e3 + 7)[1]

    want = float((X - X.mean(0)).pow(2).sum(1).mean())
    assert all(math.isclose(d, want, rel_tol=1e-9) for d in launch(clean, 5))


def test_global_averages_are_refused():
    def body(comm):
        GossipExchange(comm, T.ring(2)).average([torch.ones(2)])

    with pytest.raises(Exception, match="arch='gossip' has no global average"):
        launch(body, 2)
