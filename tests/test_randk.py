"""Rand-k with a shared seed: unbiased (statistics over seeded draws), uniform subsets, same
positions on every rank so compressed values add up, and the sum path."""
import math

import torch

from commlab.compress.randk import RandK, subset


def test_unbiased_over_many_draws():
    x = torch.randn(50, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    c, draws = RandK(0.1), 4000
    ys = torch.stack([c(x) for _ in range(draws)])
    mean, std = ys.mean(0), ys.std(0)
    assert ((mean - x).abs() <= 4 * std / math.sqrt(draws) + 1e-12).all()
    # the variance is (d/k - 1) ||x||^2
    var = (ys - x).pow(2).sum(1).mean()
    assert abs(var / ((50 / 5 - 1) * x.pow(2).sum()) - 1) < 0.1


def test_subsets_are_distinct_sorted_and_uniform():
    counts = torch.zeros(40)
    for seed in range(3000):
        s = subset(40, 3, seed)
        assert s.numel() == 3 and s.unique().numel() == 3 and torch.equal(s, s.sort().values)
        counts[s] += 1
    # each position is in a 3-subset of 40 with probability 3/40: 225 times out of 3000
    assert ((counts - 225).abs() < 4 * math.sqrt(225)).all()
    big = subset(10_000_000, 100_000, 7)
    assert big.numel() == 100_000 and big.unique().numel() == 100_000 and big.max() < 10_000_000
    assert torch.equal(subset(100, 50, 3), subset(100, 50, 3))


def test_shared_seed_makes_compressed_values_summable():
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(300, generator=g) for _ in range(3)]
    cs = [RandK(0.1, seed=5) for _ in xs]
    payloads = [c.compress(x) for c, x in zip(cs, xs)]
    assert all(torch.equal(p["seed"], payloads[0]["seed"]) for p in payloads)
    summed = sum(c.decompress(p) for c, p in zip(cs, payloads))
    assert torch.allclose(summed, RandK(0.1, seed=5)(sum(xs)), atol=1e-5)
    # the sum path: summable values add, from_summed averages at the shared positions
    cs = [RandK(0.1, seed=5) for _ in xs]
    s = sum(c.summable(x) for c, x in zip(cs, xs))
    assert torch.allclose(cs[0].from_summed(s, xs[0], 3), summed / 3, atol=1e-5)


def test_draws_change_per_call_and_differ_by_seed():
    x = torch.randn(1000)
    c = RandK(0.05)
    a, b = c.compress(x), c.compress(x)
    assert not torch.equal(a["seed"], b["seed"])
    assert not torch.equal(RandK(0.05, seed=1).compress(x)["seed"], RandK(0.05, seed=2).compress(x)["seed"])
