"""commlab.parallel.tensor: Megatron's f and g and sequence parallelism's gather/scatter are each
other's adjoints; column-then-row linear layers equal the unsplit MLP; bad sizes are refused."""
import threading

import pytest
import torch
from torch import nn

from commlab.parallel.group import Group
from commlab.parallel.tensor import (ColumnParallelLinear, RowParallelLinear, copy_to, gather_sequence, reduce_from,
                                     scatter_sequence, tp_bytes)
from commlab.parallel.tensor_layer import ParallelTransformerLayer
from commlab.runtime import launch

_LOCK = threading.Lock()


def _operators(comm):
    g = Group(comm, range(comm.world_size))
    x = torch.full((2, 4, 3), float(comm.rank + 1), requires_grad=True)
    y = copy_to(g, x)
    (y * (comm.rank + 1)).sum().backward()
    f_grad = x.grad.clone()  # all-reduce of every rank's gradient
    x.grad = None
    reduce_from(g, x).sum().backward()
    g_out, g_grad = reduce_from(g, x.detach()), x.grad.clone()
    x.grad = None
    gathered = gather_sequence(g, x)
    (gathered * torch.arange(gathered.shape[1]).view(1, -1, 1)).sum().backward()
    return f_grad, g_out, g_grad, gathered.detach(), x.grad.clone(), scatter_sequence(g, x.detach())


def test_operators_do_what_megatron_says():
    p = 2
    res = launch(_operators, p)
    total = sum(r + 1 for r in range(p))
    for rank, (f_grad, g_out, g_grad, gathered, s_grad, scattered) in enumerate(res):
        assert torch.all(f_grad == sum(r + 1 for r in range(p)))      # f: gradients summed
        assert torch.all(g_out == total) and torch.all(g_grad == 1)   # g: forward summed, backward as is
        assert gathered.shape == (2, 8, 3)                            # the sequence shards in rank order
        assert torch.all(gathered[:, :4] == 1) and torch.all(gathered[:, 4:] == 2)
        # backward of the gather: reduce-scatter of every rank's (identical) position weights
        want = p * torch.arange(4 * rank, 4 * rank + 4).float().view(1, -1, 1).expand(2, 4, 3)
        assert torch.equal(s_grad, want)
        assert scattered.shape == (2, 2, 3) and torch.all(scattered == total)


def _mlp(comm):
    with _LOCK:
        torch.manual_seed(0)
        a, b = nn.Linear(6, 8), nn.Linear(8, 6)
        x = torch.randn(5, 6)
    ref = b(torch.relu(a(x)))
    g = Group(comm, range(comm.world_size))
    col, row = ColumnParallelLinear.from_linear(g, a), RowParallelLinear.from_linear(g, b)
    return (row(torch.relu(col(x))) - ref).abs().max().item()


@pytest.mark.parametrize("world", [1, 2, 4])
def test_column_then_row_is_the_unsplit_mlp(world):
    assert max(launch(_mlp, world)) < 1e-6


def test_gloo_mlp_equals():
    assert max(launch(_mlp, 2, runtime="gloo")) < 1e-6


def test_bytes_closed_form():
    out = tp_bytes(4, 1024, 4096, 4, bytes_per_value=2)
    assert out["forward"] == out["backward"] == 2 * 2 * 3 / 4 * 4 * 1024 * 4096 * 2


def test_bad_sizes_name_the_valid_tp():
    layer = nn.TransformerEncoderLayer(12, 3, 48, 0.0, batch_first=True, norm_first=True)

    def split(comm):
        ParallelTransformerLayer.from_layer(Group(comm, range(comm.world_size)), layer)

    with pytest.raises(Exception, match=r"tp=2 must divide the 3 heads.*valid tp: 1, 3"):
        launch(split, 2)
    post = nn.TransformerEncoderLayer(12, 3, 48, 0.0, batch_first=True, norm_first=False)
    with pytest.raises(ValueError, match="pre-norm"):
        ParallelTransformerLayer.from_layer(type("G", (), {"size": 1, "index": 0})(), post)

    def odd_sequence(comm):
        g = Group(comm, range(comm.world_size))
        scatter_sequence(g, torch.zeros(1, 3, 2))

    with pytest.raises(Exception, match="multiple of the tensor-parallel size"):
        launch(odd_sequence, 2)
