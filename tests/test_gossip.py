"""Gossip over Comm: one step equals W @ X, its simulated time equals commlab.decentral.gossip.cost with the
largest degree, and repeated steps reach the mean at the rate the spectral gap predicts."""
import math

import numpy as np
import pytest
import torch

from commlab.decentral import topology as T
from commlab.decentral.architecture import Gossip
from commlab.decentral.gossip import consensus, gossip_step, replay_share, share
from commlab.net import LinkModel, Network, cost
from commlab.runtime import launch
from commlab.decentral.gossip import cost as gossip_cost

CASES = [("ring", 2), ("ring", 7), ("torus", 9), ("torus", 8), ("hypercube", 8), ("exponential", 12),
         ("complete", 5), ("star", 6), ("random_regular(d=3, seed=4)", 10), ("ring", 1)]


def _x(rank, numel=6, dtype=torch.float64):
    return torch.randn(numel, generator=torch.Generator().manual_seed(rank), dtype=dtype)


def _step(comm, spec):
    x = _x(comm.rank)
    out = gossip_step(comm, x, spec)
    assert torch.equal(x, _x(comm.rank))  # the input is left as it is
    return out


@pytest.mark.parametrize("spec,n", CASES)
def test_one_step_equals_w_times_x(spec, n):
    out = torch.stack(launch(_step, n, args=(spec,)))
    w = torch.from_numpy(T.get(spec, n).mixing_matrix())
    x = torch.stack([_x(r) for r in range(n)])
    torch.testing.assert_close(out, w @ x, rtol=1e-12, atol=1e-12)


def test_one_step_on_gloo():
    out = torch.stack(launch(_step, 4, runtime="gloo", args=("star",), timeout=60))
    x = torch.stack([_x(r) for r in range(4)])
    torch.testing.assert_close(out, torch.from_numpy(T.star(4).mixing_matrix()) @ x, rtol=1e-12, atol=1e-12)


# ----- consensus at the rate of the spectral gap ------------------------------------------------
def _consensus(comm, top, steps, seed):
    x = torch.randn(4, generator=torch.Generator().manual_seed(seed * 100 + comm.rank), dtype=torch.float64)
    trace = [x]
    for _ in range(steps):
        trace.append(gossip_step(comm, trace[-1], top))
    return torch.stack(trace)


@pytest.mark.parametrize("spec,n,steps", [("ring", 8, 60), ("torus", 16, 40), ("exponential", 16, 16),
                                          ("random_regular(d=3)", 12, 30)])
def test_consensus_converges_at_the_rate_of_the_spectral_gap(spec, n, steps):
    top = T.get(spec, n)
    lam = 1 - top.spectral_gap()
    for seed in range(3):
        xs = torch.stack(launch(_consensus, n, args=(top, steps, seed)), dim=1)  # (steps+1, n, 4)
        mean = xs[0].mean(0)
        for t in range(steps + 1):
            torch.testing.assert_close(xs[t].mean(0), mean, rtol=0, atol=1e-12)  # the average is kept
        err = (xs - mean).flatten(1).norm(dim=1)
        assert all(err[t] <= lam ** t * err[0] * (1 + 1e-9) for t in range(steps + 1))  # the bound
        rate = (err[-1] / err[-11]) ** 0.1  # the asymptotic rate of a random start: lambda itself
        assert rate.item() == pytest.approx(lam, rel=0.02)


def test_complete_graph_reaches_the_mean_in_one_step_and_consensus_helper():
    def body(comm):
        return consensus(comm, _x(comm.rank), "complete", 1), consensus(comm, _x(comm.rank), T.ring(5), 200)

    out = launch(body, 5)
    mean = torch.stack([_x(r) for r in range(5)]).mean(0)
    for one, many in out:
        torch.testing.assert_close(one, mean, rtol=0, atol=1e-12)
        torch.testing.assert_close(many, mean, rtol=0, atol=1e-9)  # 0.54^200: far below 1e-9


# ----- simulated time and bytes --------------------------------------------------------------
L = LinkModel(alpha=1e-3, beta=1e-9)
NUMEL = 84_000
N = 4 * NUMEL


def _timed(comm, top):
    before = comm.stats.snapshot()
    gossip_step(comm, torch.ones(NUMEL), top)
    return comm.now, comm.stats.snapshot() - before


TIMED = ([("ring", n) for n in range(2, 17)] + [("torus", n) for n in (4, 6, 8, 9, 12, 15, 16)]
         + [("hypercube", n) for n in (2, 4, 8, 16)] + [("exponential", n) for n in (3, 5, 8, 11, 16)]
         + [("complete", n) for n in (2, 6, 11, 16)] + [("star", n) for n in (2, 3, 9, 16)]
         + [(f"random_regular(d={d}, seed={n})", n) for n, d in ((6, 3), (10, 4), (16, 3), (16, 5))])


@pytest.mark.parametrize("spec,n", TIMED)
def test_simulated_time_equals_closed_form(spec, n):
    top = T.get(spec, n)
    out = launch(_timed, n, net=Network(L), args=(top,))
    assert max(now for now, _ in out) == pytest.approx(gossip_cost(N, top.max_degree, L), rel=1e-9)
    assert Gossip(spec).time(N, n, L) == gossip_cost(N, top.max_degree, L)
    for i, (_, stats) in enumerate(out):  # node i sends its vector to each neighbour and takes theirs
        assert stats.bytes_sent == stats.bytes_recv == top.degrees[i] * N
        assert stats.msgs_sent == stats.msgs_recv == top.degrees[i]


# ----- the replay of share, for a rendezvous that sends no messages ---------------------------
def _share_both_ways(comm, spec, shared):
    top = T.get(spec, comm.world_size)
    comm.compute(seconds=1e-4 * (comm.rank + 1))  # unequal clocks before the step
    piece = torch.arange(5 + 7 * comm.rank, dtype=torch.float32)  # a different length per rank
    if shared:
        pieces = comm.gather_shared(piece, replay_share(top))
        got = {j: pieces[j] for j in top.neighbors[comm.rank]}
    else:
        got = share(comm, piece, top)
    return ({j: got[j].tolist() for j in sorted(got)}, comm.stats.snapshot(), comm.now, comm.clock.out_free,
            comm.clock.in_free)


@pytest.mark.parametrize("spec, n", [("ring", 2), ("ring", 7), ("torus", 9), ("star", 6), ("complete", 5)])
def test_the_replay_counts_and_times_the_messages_of_share(spec, n):
    """The threads runtime's rendezvous (Comm.gather_shared) with share's replay gives every rank
    the neighbours' pieces, bytes, messages and clock that share sending its messages gives."""
    net = Network("10GbE", slowdown={1: 3.0})
    assert launch(_share_both_ways, n, args=(spec, True), net=net) == launch(_share_both_ways, n,
                                                                              args=(spec, False), net=net)
