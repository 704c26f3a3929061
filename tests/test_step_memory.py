"""commlab.sim.step_memory: what a step holds, counted and measured: parameters and gradients
from the parameters, activations from the tensors autograd saves (linear in the batch, a
parameter's own storage never counted), and a worker's total with each optimizer."""
import pytest
import torch

from commlab.sim.step_memory import per_worker, step_memory, zero_worker


def _memory(model, batch):
    x = torch.randn(batch, 16)
    params = [p for p in model.parameters()]
    return step_memory(model, lambda: model(x), lambda out: out.float().mean(), params)


def test_parameters_gradients_and_activations():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    four, eight = _memory(model, 4), _memory(model, 8)
    nbytes = 4 * (16 * 32 + 32 + 32 * 4 + 4)
    assert four["parameters"] == four["gradients"] == nbytes
    # saved for backward: the input (for the first weight's gradient), the ReLU's output (for its own
    # backward and the second weight's gradient): 4 * (16 + 32) floats a sample, never a weight
    assert four["activations"] == 4 * 4 * (16 + 32)
    assert eight["activations"] == 2 * four["activations"]
    assert all(p.grad is None for p in model.parameters())  # the step leaves no gradient behind


def test_a_worker_holds_parameters_gradients_optimizer_state_and_activations():
    memory = {"parameters": 100, "gradients": 100, "activations": 50}
    assert per_worker(memory, "adam") == {"parameters": 100, "gradients": 100, "optimizer": 200,
                                          "activations": 50, "total": 450}
    assert per_worker(memory, "sgd")["total"] == 250
    with pytest.raises(ValueError, match="optimizer='lamb' is not one of sgd, momentum, adam"):
        per_worker(memory, "lamb")


def test_zero_shards_the_optimizer_then_the_gradients_then_the_parameters():
    memory = {"parameters": 100, "gradients": 100, "activations": 50}
    assert [zero_worker(memory, 4, s, "adam") for s in (1, 2, 3)] == [100 + 100 + 50 + 50, 100 + 25 + 50 + 50,
                                                                       25 + 25 + 50 + 50]
    assert zero_worker(memory, 1, 3) == per_worker(memory)["total"]  # one worker shards nothing
    with pytest.raises(ValueError, match="stage=4 is not a ZeRO stage; valid: 1, 2, 3"):
        zero_worker(memory, 4, 4)
