"""commlab.parallel.experts: the expert-parallel MoE equals the single-process MoE on each rank's
tokens (outputs and gradients), all-to-all's bytes and time are the closed forms, routing drops
what capacity forbids, and bad settings name the valid choices."""
import threading

import pytest
import torch

from commlab.net.clock import Network
from commlab.net.link import LinkModel
from commlab.parallel.experts import ExpertParallelMoE, MoE, all_to_all, all_to_all_bytes, all_to_all_cost
from commlab.parallel.group import Group
from commlab.runtime import launch

H, F_, T = 8, 16, 12
_LOCK = threading.Lock()


def _setup(experts, top_k, cf, world):
    with _LOCK:
        torch.manual_seed(0)
        moe = MoE(H, F_, experts, top_k, cf)
        xs = [torch.randn(T, H) for _ in range(world)]
        ws = [torch.randn(T, H) for _ in range(world)]
    return moe, xs, ws


def _rank(comm, experts, top_k, cf):
    moe, xs, ws = _setup(experts, top_k, cf, comm.world_size)
    ep = ExpertParallelMoE.from_moe(Group(comm, range(comm.world_size)), moe)
    x = xs[comm.rank].clone().requires_grad_(True)
    before = comm.stats.bytes_sent
    y, aux = ep(x)
    ((y * ws[comm.rank]).sum() + aux).backward()
    grads = {"gate": ep.gate.weight.grad, "x": x.grad,
             "experts": [[q.grad for q in e.parameters()] for e in ep.experts]}
    return y.detach(), grads, comm.stats.bytes_sent - before, ep.bytes_per_step(T, H)


@pytest.mark.parametrize("world, experts", [(2, 4), (4, 4), (4, 8)])
@pytest.mark.parametrize("top_k, cf", [(1, 1.0), (2, 1.0), (1, 4.0), (2, 0.5)])
def test_equals_the_single_process_moe_on_each_ranks_tokens(world, experts, top_k, cf):
    results = launch(_rank, world, args=(experts, top_k, cf))
    moe, xs, ws = _setup(experts, top_k, cf, world)
    outs, gates, xgrads = [], [], []
    for x, w in zip(xs, ws):
        moe.gate.weight.grad = None
        x = x.clone().requires_grad_(True)
        y, aux = moe(x)
        ((y * w).sum() + aux).backward()
        outs.append(y.detach())
        gates.append(moe.gate.weight.grad.clone())
        xgrads.append(x.grad)
    local = experts // world
    for r, (y, grads, sent, want_bytes) in enumerate(results):
        assert torch.allclose(y, outs[r], atol=1e-5)
        assert torch.allclose(grads["x"], xgrads[r], atol=1e-5)
        assert torch.allclose(grads["gate"], gates[r], atol=1e-5)
        for i, expert_grads in enumerate(grads["experts"]):  # every rank's tokens add up on the owner
            for g, q in zip(expert_grads, moe.experts[r * local + i].parameters()):
                assert torch.allclose(g, q.grad, atol=1e-5)
        assert sent == want_bytes == 4 * (world - 1) * local * moe.capacity(T) * H * 4


def test_capacity_drops_tokens_in_order():
    torch.manual_seed(0)
    moe = MoE(H, F_, 4, top_k=1, capacity_factor=0.5)
    x = torch.randn(T, H)
    tokens, slots, _, cap, _, dropped = moe.route(x)
    assert cap == 2 and len(tokens) + dropped == T and len(tokens) <= 4 * cap
    assert len(set(slots.tolist())) == len(slots)  # one token per slot
    assert MoE(H, F_, 4, 1, 100.0).route(x)[5] == 0


def _exchange(comm, n):
    g = Group(comm, range(comm.world_size))
    chunks = [torch.full((n,), float(comm.rank * 10 + j)) for j in range(comm.world_size)]
    got = all_to_all(g, chunks)
    return [t[0].item() for t in got], comm.now, comm.stats.bytes_sent


def test_all_to_all_delivers_and_costs_the_closed_form():
    p, n = 4, 1000
    link = LinkModel(1e-5, 1e-9)
    results = launch(_exchange, p, net=Network(link, flops=None), args=(n,))
    for r, (got, now, sent) in enumerate(results):
        assert got == [float(j * 10 + r) for j in range(p)]
        assert sent == all_to_all_bytes(p * n * 4, p)
        assert now == pytest.approx(all_to_all_cost(p * n * 4, p, link))


def test_gloo_equals_threads():
    threads = launch(_rank, 2, args=(4, 2, 1.0))
    gloo = launch(_rank, 2, runtime="gloo", args=(4, 2, 1.0))
    for a, b in zip(threads, gloo):
        assert torch.allclose(a[0], b[0], atol=1e-6) and a[2] == b[2]


def test_bad_settings_name_the_valid_choices():
    with pytest.raises(ValueError, match="valid: 1 .Switch., 2 .GShard."):
        MoE(H, F_, 4, top_k=3)
    with pytest.raises(ValueError, match="capacity_factor=0"):
        MoE(H, F_, 4, capacity_factor=0)

    def split(comm):
        ExpertParallelMoE.from_moe(Group(comm, range(3)), MoE(H, F_, 4))

    with pytest.raises(Exception, match="valid group sizes: 1, 2, 4"):
        launch(split, 3)
