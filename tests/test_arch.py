"""The native architecture is the runtime's all-reduce; the registry names the others."""
import pytest
import torch

from commlab import arch
from commlab.arch import ARCHITECTURES, AllReduce, ParameterServer
from commlab.runtime import launch


def _value(rank, n=10):
    return torch.randn(n, generator=torch.Generator().manual_seed(rank)) * (rank + 1)


@pytest.mark.parametrize("world", [1, 3, 4])
@pytest.mark.parametrize("op", ["sum", "avg", "max", "min", "prod"])
def test_native_equals_comm_all_reduce(world, op):
    def body(comm):
        a = arch.get("native")
        x, y = _value(comm.rank), _value(comm.rank)
        s0 = comm.stats.snapshot()
        out = a.allreduce(comm, x, op=op)
        s1 = comm.stats.snapshot()
        comm.all_reduce(y, op=op)
        s2 = comm.stats.snapshot()
        return out is x, x, y, s1 - s0, s2 - s1

    results = launch(body, world)
    vals = torch.stack([_value(r) for r in range(world)])
    want = {"sum": vals.sum(0), "avg": vals.mean(0), "max": vals.max(0).values, "min": vals.min(0).values,
            "prod": vals.prod(0)}[op]
    for same, x, y, d_arch, d_comm in results:
        assert same  # in place
        assert torch.equal(x, y)
        torch.testing.assert_close(x, want)
        assert d_arch == d_comm  # same bytes and messages counted


def test_native_default_op_is_sum_and_clock_matches():
    def body(comm):
        x = torch.ones(1000)
        arch.get("native").allreduce(comm, x)
        t_arch = comm.now
        comm.all_reduce(torch.ones(1000))
        return x, t_arch, comm.now - t_arch

    for x, t_arch, t_comm in launch(body, 4, net="10GbE"):
        assert torch.equal(x, torch.full((1000,), 4.0))
        assert t_arch == pytest.approx(t_comm) and t_arch > 0


def _native_beside_comm(comm):  # at module level: a fork server can only start what it can import
    x, y = _value(comm.rank), _value(comm.rank)
    arch.get("native").allreduce(comm, x, op="avg")
    comm.all_reduce(y, op="avg")
    return x, y


def test_native_all_reduce_on_gloo():
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("Gloo is not available")

    for x, y in launch(_native_beside_comm, 2, runtime="gloo"):
        assert torch.equal(x, y)
        torch.testing.assert_close(x, (_value(0) + _value(1)) / 2)


def test_registry():
    assert ARCHITECTURES.names() == sorted(["native", "naive", "ring", "tree", "double_tree", "halving_doubling",
                                            "hierarchical", "ps", "gossip", "zero", "switchml"])
    a = arch.get()
    assert isinstance(a, AllReduce) and a.name == "native" and repr(a) == "AllReduce('native')"
    assert arch.get("Double-Tree").name == "double_tree"
    assert arch.get("hierarchical(group_size=2)").kw == {"group_size": 2}
    assert isinstance(arch.get("ps(shards=4)"), ParameterServer)


@pytest.mark.parametrize("name", ["ring", "tree", "double_tree", "halving_doubling", "naive", "hierarchical(group_size=2)"])
def test_every_algorithm_equals_native_all_reduce(name):
    def body(comm):
        x, y = _value(comm.rank, 37), _value(comm.rank, 37)
        arch.get(name).allreduce(comm, x, op="avg")
        comm.all_reduce(y, op="avg")
        return x, y

    for x, y in launch(body, 4):
        torch.testing.assert_close(x, y, rtol=1e-6, atol=1e-6)


def test_gossip_is_registered_by_the_decentralized_package():
    assert arch.get("gossip").name == "gossip"


def test_unknown_and_bad_arguments():
    with pytest.raises(ValueError, match=r"unknown architecture 'star'; valid: .*native.*ring"):
        arch.get("star")
    with pytest.raises(ValueError, match=r"bad arguments for architecture 'native\(fast=True\)'"):
        arch.get("native(fast=True)")
