"""Counting parameters and FLOPs, and model intensity (commlab.models.intensity)."""
import pytest
import torch
from torch import nn

from commlab import models
from commlab.models import intensity


def test_linear_flops_closed_form():
    # FlopCounterMode counts 2 FLOPs per multiply-accumulate of the matmul (the bias add
    # is not counted). Backward computes the input and the weight gradient: 2x forward.
    lin = nn.Linear(7, 5)
    x = torch.randn(4, 7)
    assert intensity.flops_per_sample(lin, x, backward=False) == 2 * 7 * 5
    assert intensity.flops_per_sample(lin, x, backward=True) == 3 * 2 * 7 * 5
    assert lin.weight.grad is None  # counting leaves no gradients behind


def test_flops_counting_leaves_model_untouched():
    model = models.resnet20()
    model(torch.randn(4, 3, 32, 32)).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    stats = [b.clone() for b in model.buffers()]
    intensity.flops_per_sample(model, torch.randn(1, 3, 32, 32))
    assert model.training
    assert all(torch.equal(p.grad, g) for p, g in zip(model.parameters(), grads))
    assert all(torch.equal(b, s) for b, s in zip(model.buffers(), stats))


def test_conv_flops_closed_form():
    conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
    x = torch.randn(2, 3, 6, 6)
    assert intensity.flops_per_sample(conv, x, backward=False) == 2 * (3 * 3 * 3) * 8 * 6 * 6


def test_flops_on_meta_with_dict_input():
    lin = nn.Linear(3, 2, device="meta")

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def forward(self, features):
            return {"out": self.lin(features)}

    x = {"features": torch.zeros(5, 3, device="meta")}
    assert intensity.flops_per_sample(Wrap(), x) == 3 * 2 * 3 * 2
