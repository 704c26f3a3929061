"""ParallelTransformerLayer (Megatron TP, and sequence parallelism) equals the full layer."""
import pytest
import torch
import torch.nn as nn

from commlab.parallel.group import Group
from commlab.parallel.tensor_layer import ParallelTransformerLayer
from commlab.runtime import launch


def _layer():
    g = torch.Generator().manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 4, 32, dropout=0.0, batch_first=True, norm_first=True)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return layer, torch.randn(2, 8, 8, generator=g)


@pytest.mark.parametrize("t", [2, 4])
@pytest.mark.parametrize("sp", [False, True])
def test_forward_matches_full_layer(t, sp):
    layer, x = _layer()
    want = layer(x).detach()

    def run(comm):
        group = Group(comm, list(range(t)), 7)
        par = ParallelTransformerLayer.from_layer(group, layer, sequence_parallel=sp)
        inp = x.chunk(t, dim=1)[group.index] if sp else x
        return par(inp).detach()

    outs = launch(run, t)
    got = torch.cat(outs, dim=1) if sp else outs[0]
    assert torch.allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("t", [2, 4])
@pytest.mark.parametrize("sp", [False, True])
def test_shard_gradients_match_full_layer(t, sp):
    from commlab.parallel.tensor_layer import sync_replicated_grads
    layer, x = _layer()
    w = torch.randn(2, 8, 8, generator=torch.Generator().manual_seed(1))
    (layer(x) * w).sum().backward()
    full = {n: p.grad.clone() for n, p in layer.named_parameters()}

    def run(comm):
        group = Group(comm, list(range(t)), 7)
        par = ParallelTransformerLayer.from_layer(group, layer, sequence_parallel=sp)
        inp, ww = (x.chunk(t, 1)[group.index], w.chunk(t, 1)[group.index]) if sp else (x, w)
        (par(inp) * ww).sum().backward()
        sync_replicated_grads(par, group)
        errs = []
        for p, name, dim, idx in par.slices():
            ref = full[name] if dim is None else full[name].index_select(dim, idx)
            errs.append((p.grad - ref).abs().max().item())
        return max(errs)

    assert max(launch(run, t)) < 1e-5


@pytest.mark.parametrize("t", [2, 4])
@pytest.mark.parametrize("sp", [False, True])
def test_measured_bytes_equal_closed_form(t, sp):
    from commlab.parallel.tensor import tp_bytes
    layer, x = _layer()

    def run(comm):
        group = Group(comm, list(range(t)), 7)
        par = ParallelTransformerLayer.from_layer(group, layer, sequence_parallel=sp)
        inp = x.chunk(t, 1)[group.index] if sp else x
        before = comm.stats.bytes_sent
        par(inp).sum().backward()
        return comm.stats.bytes_sent - before

    want = tp_bytes(2, 8, 8, t, sequence_parallel=sp)
    assert launch(run, t) == [want["forward"] + want["backward"]] * t
