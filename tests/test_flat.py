"""flatten / unflatten_into / grads: the one flat buffer that goes on the wire."""
import pytest
import torch

from commlab.flat import flatten, grads, unflatten_into


def _tensors():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(3, 4, generator=g), torch.randn(5, generator=g), torch.randn(2, 1, 3, generator=g),
            torch.randn((), generator=g)]


def test_flatten_concatenates_in_order():
    ts = _tensors()
    flat = flatten(ts)
    assert flat.dim() == 1 and flat.numel() == 12 + 5 + 6 + 1
    assert torch.equal(flat[:12], ts[0].reshape(-1))
    assert torch.equal(flat[12:17], ts[1])
    assert flat[-1] == ts[3]


def test_flatten_is_a_copy_and_accepts_iterators():
    ts = _tensors()
    flat = flatten(iter(ts))
    flat.zero_()
    assert ts[0].abs().sum() > 0
    assert flatten([]).numel() == 0


def test_round_trip():
    ts = _tensors()
    flat = flatten(ts)
    out = [torch.zeros_like(t) for t in ts]
    unflatten_into(flat, out)
    for a, b in zip(ts, out):
        assert torch.equal(a, b) and a.shape == b.shape


def test_unflatten_into_writes_in_place_into_parameters():
    model = torch.nn.Linear(3, 2)
    params = list(model.parameters())
    ids = [p.data_ptr() for p in params]
    with torch.no_grad():
        unflatten_into(torch.arange(8, dtype=torch.float32), params)
    assert [p.data_ptr() for p in params] == ids
    assert torch.equal(model.weight.detach(), torch.arange(6.0).reshape(2, 3))
    assert torch.equal(model.bias.detach(), torch.tensor([6.0, 7.0]))


@pytest.mark.parametrize("n", [23, 25, 0])
def test_size_mismatch_is_value_error_and_leaves_tensors_alone(n):
    ts = _tensors()  # 24 elements
    before = [t.clone() for t in ts]
    with pytest.raises(ValueError, match=f"flat buffer has {n} elements but the tensors hold 24"):
        unflatten_into(torch.zeros(n), ts)
    assert all(torch.equal(a, b) for a, b in zip(ts, before))


def test_grads_fills_missing_with_zeros():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    model[0].weight.requires_grad_(False)  # frozen: left out
    model(torch.ones(5, 4))[:, 0].sum().backward()
    model[1].bias.grad = None  # a parameter that got no gradient
    gs = grads(model)
    assert len(gs) == 3  # model[0].bias, model[1].weight, model[1].bias
    assert gs[2] is model[1].bias.grad and torch.equal(gs[2], torch.zeros(2))
    assert gs[0] is model[0].bias.grad and gs[1] is model[1].weight.grad
    assert model[0].weight.grad is None
    # the returned tensors are the .grad tensors: writing them writes the model's gradients
    unflatten_into(torch.ones(sum(g.numel() for g in gs)), gs)
    assert torch.equal(model[1].weight.grad, torch.ones(2, 3))


def test_grads_on_fresh_model_are_zeros():
    model = torch.nn.Linear(3, 2)
    gs = grads(model)
    assert [g.shape for g in gs] == [(2, 3), (2,)]
    assert all(torch.equal(g, torch.zeros_like(g)) for g in gs)
    assert flatten(gs).numel() == 8
