"""BSP over the runtime, and the synchronization registry."""
import pytest
import torch

from commlab import arch, sync
from commlab.runtime import launch
from commlab.sync import SYNCS
from commlab.sync.bsp import BSP


def _build():
    return torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))


torch.manual_seed(0)
_STATE = _build().state_dict()


def _model():
    """The same start on every rank. Ranks are threads sharing torch's global RNG, so the
    weights come from a state dict made once, not from seeding inside each thread."""
    m = _build()
    m.load_state_dict(_STATE)
    return m


def _grads_of(rank, model):
    x = torch.randn(8, 5, generator=torch.Generator().manual_seed(100 + rank))
    model.zero_grad()
    model(x).square().sum().backward()
    return [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("world", [1, 2, 4])
def test_bsp_step_averages_gradients_and_keeps_replicas_equal(world):
    lr = 0.05
    # expected: every rank's gradient at the same start, averaged, one SGD step
    ref = _model()
    per_rank = [_grads_of(r, _model()) for r in range(world)]
    avg = [sum(g[i] for g in per_rank) / world for i in range(len(per_rank[0]))]
    want = [p.detach() - lr * a for p, a in zip(ref.parameters(), avg)]

    def body(comm):
        model = _model()
        _grads_of(comm.rank, model)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        assert sync.get("bsp").step(comm, model, opt, arch.get("native")) == {}
        return [p.detach().clone() for p in model.parameters()], [p.grad.clone() for p in model.parameters()], \
            comm.stats.bytes_sent

    out = launch(body, world)
    n_params = sum(p.numel() for p in ref.parameters())
    for params, grads, sent in out:
        for p, w in zip(params, want):
            torch.testing.assert_close(p, w, rtol=1e-6, atol=1e-7)
        for g, a in zip(grads, avg):  # the model's .grad now holds the average
            torch.testing.assert_close(g, a, rtol=1e-6, atol=1e-7)
        assert sent == round(2 * (world - 1) / world * 4 * n_params)  # one flat all-reduce
    for params, _, _ in out[1:]:
        assert all(torch.equal(a, b) for a, b in zip(params, out[0][0]))


def test_bsp_handles_parameters_without_grad():
    def body(comm):
        model = _model()
        model[0].weight.grad = None  # never got a gradient: treated as zeros
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        before = model[0].weight.detach().clone()
        BSP().step(comm, model, opt, arch.get("native"))
        return torch.equal(model[0].weight.detach(), before)

    assert launch(body, 2) == [True, True]


def test_registry():
    assert SYNCS.names() == sorted(["bsp", "asp", "ssp", "backup", "round_robin", "hogwild", "local_sgd",
                                    "post_local_sgd", "fedavg", "dynamic_batch"])
    assert isinstance(sync.get(), BSP) and isinstance(sync.get("BSP"), BSP)
    assert repr(sync.get("bsp")) == "BSP()" and BSP.name == "bsp"
    assert repr(sync.get("ssp(staleness=3)")) == "SSP(staleness=3)"
    assert repr(sync.get("local-sgd(period=4)")) == "LocalSGD(period=4)"


def test_unknown_and_bad_arguments():
    with pytest.raises(ValueError, match=r"unknown synchronization 'bulk'; valid: asp, backup, bsp, dynamic_batch"):
        sync.get("bulk")
    with pytest.raises(ValueError, match=r"bad arguments for synchronization 'bsp\(1\)'"):
        sync.get("bsp(1)")
    with pytest.raises(ValueError, match="cannot read spec"):
        sync.get("bsp(")
