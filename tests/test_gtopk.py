"""gTop-k: the tree against a numpy replay of its merges (threads, N = 1..7, and Gloo), the
residual of the paper's algorithm, the binomial tree for any N, the closed-form cost."""
import math

import numpy as np
import pytest
import torch

from commlab.arch.aggregate import aggregate
from commlab.arch.gtopk_allreduce import cost, tree
from commlab.compress.gtopk import GTopK, merge
from commlab.compress.topk import count
from commlab.net import LinkModel
from commlab.runtime import launch

D, RATIO = 2000, 0.02


def _grad(rank, step, d=D):
    return torch.randn(d, generator=torch.Generator().manual_seed(100 * rank + step))


def _topk_np(v, k):
    out = np.zeros_like(v)
    keep = np.argsort(-np.abs(v), kind="stable")[:k]
    out[keep] = v[keep]
    return out


def oracle(n, steps=2, d=D, ratio=RATIO):
    """numpy replay: each worker's residual-corrected top-k, merged pairwise up the tree
    (sum, keep top-k) exactly as the algorithm defines; the residual as in the paper."""
    k = count(ratio, d)
    res = [np.zeros(d, np.float32) for _ in range(n)]
    outs = []
    for step in range(steps):
        acc = [res[r] + _grad(r, step, d).numpy() for r in range(n)]
        local = [_topk_np(a, k) for a in acc]
        vec = list(local)
        s = 1
        while s < n:
            for r in range(0, n, 2 * s):
                if r + s < n:
                    vec[r] = _topk_np(vec[r] + vec[r + s], k)
            s *= 2
        glob = vec[0]
        for r in range(n):
            delivered = (local[r] != 0) & (glob != 0)
            res[r] = np.where(delivered, 0, acc[r]).astype(np.float32)
        outs.append(glob / n)
    return outs


def _run(comm, steps=2, d=D, ratio=RATIO):
    c = GTopK(ratio)
    out = []
    for step in range(steps):
        g = _grad(comm.rank, step, d)
        out.append(aggregate(comm, c, g, key="w"))
        assert torch.equal(g, _grad(comm.rank, step, d)), "aggregate must not change its input"
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7])
def test_equals_the_numpy_replay_on_threads(n):
    results = launch(_run, n)
    want = oracle(n)
    for step in range(2):
        for r in range(n):
            assert torch.equal(results[r][step], results[0][step])
        np.testing.assert_allclose(results[0][step].numpy(), want[step], rtol=1e-6, atol=1e-7)
        assert int((results[0][step] != 0).sum()) == count(RATIO, D)


def test_equals_the_numpy_replay_on_gloo():
    n = 3
    results = launch(_run, n, runtime="gloo", timeout=60)
    want = oracle(n)
    for step in range(2):
        for r in range(n):
            np.testing.assert_allclose(results[r][step].numpy(), want[step], rtol=1e-6, atol=1e-7)


def test_binomial_tree_covers_every_rank_once():
    for n in range(1, 20):
        parents = {r: tree(r, n)[0] for r in range(n)}
        assert parents[0] is None and all(parents[r] is not None for r in range(1, n))
        for r in range(n):
            for kid in tree(r, n)[1]:
                assert parents[kid] == r
        def depth(r):
            return 0 if parents[r] is None else 1 + depth(parents[r])
        rounds = math.ceil(math.log2(n)) if n > 1 else 0  # the root merges one child per round
        assert len(tree(0, n)[1]) == rounds and max(depth(r) for r in range(n)) <= rounds


def test_merge_adds_overlaps_and_keeps_k():
    idx, val = merge(torch.tensor([1, 5, 9]), torch.tensor([1.0, -2.0, 0.5]),
                     torch.tensor([5, 7]), torch.tensor([-2.5, 3.0]), 2)
    got = dict(zip(idx.tolist(), val.tolist()))
    assert got == {5: -4.5, 7: 3.0}


def _traffic(comm):
    _run(comm, steps=1, d=100_000, ratio=0.01)
    return comm.stats.bytes_sent, comm.stats.msgs_sent


def test_traffic_and_closed_form_cost():
    n = 5
    out = launch(_traffic, n)
    m = GTopK(0.01).payload_bytes((100_000,))
    assert m == 26 + 1000 * 8
    for r, (sent, msgs) in enumerate(out):
        parent, kids = tree(r, n)
        assert msgs == (parent is not None) + len(kids) and sent == msgs * m
    link = LinkModel(1e-4, 1e-9)
    assert cost((100_000,), 0.01, n, link) == pytest.approx(2 * 3 * (1e-4 + m * 1e-9))
