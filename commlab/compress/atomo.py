"""ATOMO, spectral variant (Wang, Sievert, Liu, Charles, Papailiopoulos and Wright 2018,
"ATOMO: Communication-efficient Learning via Atomic Sparsification").

Write the gradient, viewed as a matrix A (:mod:`commlab.compress.matrix`; transposed so
that it has a <= b rows), as a sum of rank-one atoms along its singular vectors,

    A = sum_i u_i (A^T u_i)^T = sum_i sigma_i u_i v_i^T,

keep atom i with probability p_i and scale what is kept by 1/p_i:

    C(A) = sum_i (Z_i / p_i) u_i (A^T u_i)^T,   P(Z_i = 1) = p_i,   E[C(A)] = A.

Unbiased. Because the atoms are orthogonal (<a_i, a_j>_F = 0 for i != j) the variance is
E||C(A) - A||_F^2 = sum_i sigma_i^2 (1/p_i - 1), whatever the joint law of the Z_i. ATOMO
picks the p_i that minimize it for an expected budget of s = ``rank`` atoms: minimize
sum sigma_i^2 / p_i subject to sum p_i = s, 0 < p_i <= 1, whose solution is
p_i = min(1, sigma_i / lambda): the largest atoms are always sent, the others in proportion
to sigma_i (:func:`probabilities`).

Sampling: the paper draws the Z_i independently, so the budget holds in expectation. We
draw them by systematic sampling (one uniform u; atom i is kept when a point u + j lies in
its slice [p_1 + ... + p_{i-1}, p_1 + ... + p_i) of the line): each atom is kept with
probability exactly p_i, hence the same mean and, by orthogonality, the same variance,
and exactly s atoms are sent every time (fewer only when A has rank < s: then all of them,
and C(A) = A).

The singular vectors come from the eigendecomposition of the a x a Gram matrix A A^T
(a <= b), O(a^2 b + a^3), far faster than a full SVD (25M numbers as 512 x 48829: about a
second on two cores; the SVD of 1024 x 24415 takes 10 s). The atoms use A^T u_i directly
and sigma_i = ||A^T u_i||, so the sum over all atoms is U U^T A = A to rounding even where
the Gram matrix squares the condition number; atoms of norm below rounding
(sigma_i <= eps b max sigma, as for a numerical rank) count as zero. 1-D vectors are viewed
with at most ``max_rows`` = 512 rows; a layer with thousands of rows *and* columns (4096 x
4096) costs tens of seconds.

Wire: the kept u_i (a numbers each) and w_i = A^T u_i / p_i (b numbers each) in the tensor's
dtype, parts "u" and "w": ``header + s (a + b) value bytes``; tensors without a matrix view,
or where s (a + b) >= a b, go uncompressed ("raw"). Aggregation "gather" (every rank keeps
other atoms). Give every rank its own seed (seed + rank) for independent draws.

Cost on a GPU (``cost``): the Gram matrix A A^T and U^T A (2 a d flops each, 2 and 2 passes),
the eigendecomposition of a x a (about 9 a^3 flops, a sync on its status), the atoms' norms
(1 pass), then the probabilities and the draw on s atoms: some 30 tiny launches and 6 syncs;
decode: one product (1 pass, 2 s d flops). Compute-bound for large a, unlike the others.
"""
from __future__ import annotations

import torch

import math

from .base import Payload
from .cost import Cost, KernelWork, tiny
from .matrix import MIN_VECTOR, LowRank

MAX_ROWS = 512


def probabilities(sigma: torch.Tensor, s: int) -> torch.Tensor:
    """The variance-minimizing keep probabilities p_i = min(1, sigma_i / lambda), sum p_i =
    min(s, number of sigma_i > 0) (ATOMO's Algorithm 2, by sorting)."""
    sig = sigma.to(torch.float64).clamp_min(0)
    order = torch.argsort(sig, descending=True)
    srt = sig[order]
    tail = srt.flip(0).cumsum(0).flip(0)  # tail[j] = sum of srt[j:]
    p = torch.zeros_like(srt)
    for j in range(srt.numel()):
        if tail[j] <= 0 or j >= s:
            break
        share = (s - j) * srt[j:] / tail[j]
        if share[0] <= 1:
            p[j:] = share
            break
        p[j] = 1.0
    out = torch.zeros_like(p)
    out[order] = p
    return out


def systematic(p: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Indices i, each kept with probability p_i (all p_i <= 1), round(sum p) of them."""
    c = p.cumsum(0)
    points = torch.rand((), generator=g, dtype=p.dtype, device=p.device) + torch.arange(
        int(round(float(c[-1]))) if p.numel() else 0, dtype=p.dtype, device=p.device)
    return torch.unique(torch.searchsorted(c, points, right=True).clamp_max(p.numel() - 1))


class Atomo(LowRank):
    """``Atomo(rank=2)``: unbiased spectral sparsification with a budget of ``rank`` atoms."""

    name = "atomo"
    unbiased = True
    aggregation = "gather"
    factors = ("u", "w")  # the kept u_i (s x a) and A^T u_i / p_i (s x b)
    transpose = True

    def __init__(self, rank: int = 2, min_vector: int = MIN_VECTOR, max_rows: int = MAX_ROWS, seed: int = 0):
        super().__init__(rank, min_vector, seed)
        self.max_rows = max_rows

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """Keep atoms i with probabilities p_i from the singular values; send u_i and sigma_i v_i / p_i."""
        self.check(t)
        plan = self.plan(t.shape)
        if plan is None:
            return self.raw(t)
        b = plan[1]
        wide = torch.promote_types(t.dtype, torch.float32)
        A = self.matrix(t, plan, wide)
        U = torch.linalg.eigh(A @ A.T).eigenvectors
        W = U.T @ A  # row i: sigma_i v_i, the atom's right factor; its norm is sigma_i
        sigma = W.norm(dim=1)
        sigma[sigma <= sigma.max() * torch.finfo(wide).eps * b] = 0  # rounding noise: rank < a
        p = probabilities(sigma, self.rank)
        keep = systematic(p, self.generator(t.device))
        self.tick()
        return self.pack(t, U[:, keep].T, W[keep] / p[keep].to(wide)[:, None])

    def atoms(self, p: Payload) -> int:
        """How many atoms a payload carries."""
        return 0 if "raw" in p.parts else p["u"].numel() // self.plan(p.shape)[0]

    def cost(self, shape) -> Cost:
        """Gram matrix, its eigenvectors, the atoms and their norms, the keep probabilities (a loop
        on the host over the largest atoms: one round here), the systematic draw, the kept atoms."""
        plan = self.plan(shape)
        d = max(math.prod(shape), 1)
        if plan is None:
            return Cost(KernelWork(1, 5, syncs=1), KernelWork())  # the check; raw travels as it is
        a, b, s, _ = plan
        f, g = a * b / d, a * a / d  # the matrix and the Gram matrix, in passes over d
        encode = (self.matrix_work(shape)
                  + KernelWork(2 * f + g, 1, flops=2 * a * a * b)  # A A^T
                  + KernelWork(2 * g, 1, syncs=1, flops=9 * a ** 3)  # eigh (its status checked on the host)
                  + KernelWork(f + g + f, 1, flops=2 * a * a * b)  # W = U^T A
                  + KernelWork(f, 1)  # sigma = row norms of W
                  + tiny(5) + KernelWork(syncs=1)  # atoms below rounding set to 0 (a boolean mask)
                  + tiny(8) + tiny(5) + KernelWork(syncs=2) + tiny(2)  # p: sort, tail sums; one round of the loop
                  + tiny(7) + KernelWork(syncs=2)  # systematic: cumsum, its total on the host, points, searchsorted, unique
                  + KernelWork(3 * s * b / d, 5))  # the kept u_i, w_i / p_i
        return Cost(encode, self.product_work(shape, s))

    def __repr__(self) -> str:
        return f"atomo(rank={self.rank})"
