"""commlab.sim.op_trace: each operator of a step, forward and backward, with PyTorch's own FLOP
count and the bytes of its inputs and outputs, in the layer the timing rule gives it; views move
nothing and are left out."""
import torch

from commlab.schedule.profile import layer_flops
from commlab.sim.op_trace import CONV, MATMUL, OTHER, totals, trace_ops


def _trace(model, x):
    names, flops, positions = layer_flops(model, x)
    params = [p for p in model.parameters() if p.requires_grad]
    return names, flops, trace_ops(model, lambda: model(x), lambda out: out.mean(), names, positions, params)


def test_an_mlp_operator_by_operator():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    names, flops, ops = _trace(model, torch.randn(8, 16))
    # forward: layer 0 is its addmm (8 x 16 x 32 multiply-adds); layer 1 the ReLU folded into it,
    # its addmm and the loss's mean
    assert ops["forward"][0] == [[2 * 8 * 16 * 32, 4 * (8 * 16 + 32 + 16 * 32 + 8 * 32), MATMUL]]
    assert [op[2] for op in ops["forward"][1]] == [OTHER, MATMUL, OTHER]
    assert ops["forward"][1][0] == [0.0, 4 * 2 * 8 * 32, OTHER]  # the ReLU reads and writes 8 x 32 floats
    # the FLOPs of the forward pass are those the profile counts
    assert [t[1] for t in totals(ops)["forward"]] == flops
    # backward: each weight's gradient is one more product of the forward's size, and the second
    # layer also sends a gradient back to the first (one more); the first needs none for its input
    assert [t[1] for t in totals(ops)["backward"]] == [flops[0], 2 * flops[1]]
    assert all(p.grad is None for p in model.parameters())


def test_a_convolution_is_its_own_kind_and_a_view_is_no_operator():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))
    _, _, ops = _trace(model, torch.randn(2, 3, 8, 8))
    assert CONV in [op[2] for op in ops["forward"][0]]
    assert all(op[1] > 0 for phase in ops.values() for layer in phase for op in layer)
    assert len(ops["forward"][1]) == 2  # Flatten is a view: only the addmm and the mean
