"""ATOMO (spectral): unbiased over many draws, the variance-minimizing probabilities, exactly
s atoms per payload, and the variance formula sum sigma_i^2 (1/p_i - 1)."""
import math

import torch

from commlab.compress.atomo import Atomo, probabilities, systematic


def _draws(c, A, n):
    return torch.stack([c(A) for _ in range(n)])


def test_unbiased_over_many_draws_and_variance_formula():
    g = torch.Generator().manual_seed(0)
    for shape in [(6, 9), (9, 6)]:  # a <= b, and the transposed case
        A = torch.randn(*shape, generator=g, dtype=torch.float64)
        c, n = Atomo(rank=2), 3000
        ys = _draws(c, A, n)
        mean, std = ys.mean(0), ys.std(0)
        assert ((mean - A).abs() <= 4 * std / math.sqrt(n) + 1e-12).all(), shape
        sigma = torch.linalg.svdvals(A)
        p = probabilities(sigma, 2)
        want = float((sigma ** 2 * (1 / p - 1)).sum())
        got = float((ys - A).pow(2).sum((1, 2)).mean())
        assert abs(got / want - 1) < 0.15


def test_probabilities_minimize_variance_for_the_budget():
    sigma = torch.tensor([10.0, 3.0, 2.0, 1.0, 0.0], dtype=torch.float64)
    p = probabilities(sigma, 2)
    assert abs(float(p.sum()) - 2) < 1e-12 and p[0] == 1 and p[4] == 0
    assert torch.allclose(p[1:4], sigma[1:4] / 6)  # the rest in proportion to sigma
    best = float((sigma[:4] ** 2 / p[:4]).sum())
    g = torch.Generator().manual_seed(1)
    for _ in range(200):  # any other feasible choice has more variance
        q = torch.rand(4, generator=g, dtype=torch.float64) + 0.05
        q = q / q.sum() * 2
        if (q <= 1).all():
            assert float((sigma[:4] ** 2 / q).sum()) >= best - 1e-9
    assert torch.equal(probabilities(torch.tensor([1.0, 0.5]), 5), torch.ones(2, dtype=torch.float64))
    assert torch.equal(probabilities(torch.zeros(3), 2), torch.zeros(3, dtype=torch.float64))


def test_systematic_sampling_keeps_each_atom_with_probability_p():
    p = torch.tensor([1.0, 0.5, 0.25, 0.25, 0.0], dtype=torch.float64)
    counts, n = torch.zeros(5), 4000
    g = torch.Generator().manual_seed(2)
    for _ in range(n):
        keep = systematic(p, g)
        assert keep.numel() == 2
        counts[keep] += 1
    assert (counts / n - p.float()).abs().max() < 4 * math.sqrt(0.25 / n)


def test_budget_respected_and_low_rank_is_exact():
    g = torch.Generator().manual_seed(3)
    c = Atomo(rank=3)
    for shape in [(20, 30), (30, 20), (4, 5, 6), (100_000,)]:
        x = torch.randn(*shape, generator=g)
        p = c.compress(x)
        assert c.atoms(p) == 3 and p.nbytes == c.payload_bytes(shape)
    A = torch.randn(20, 2, generator=g, dtype=torch.float64) @ torch.randn(2, 30, generator=g, dtype=torch.float64)
    p = c.compress(A)
    assert c.atoms(p) == 2 and torch.allclose(c.decompress(p), A, atol=1e-10)
    assert c.atoms(c.compress(torch.zeros(20, 30))) == 0
    assert torch.equal(c(torch.zeros(20, 30)), torch.zeros(20, 30))
