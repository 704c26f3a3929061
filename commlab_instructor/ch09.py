"""Reference solutions of chapter 09: decentralized training."""
from __future__ import annotations

VARIABLES = {"check_ring_gap": "answer", "check_crossover": "answer", "check_choco_step": "step"}


def ring_gap():
    """Exercise 1: the spectral gap of a ring of 12, 1 minus the largest |1/3 + 2/3 cos(2 pi k / n)|, k > 0."""
    import math

    n = 12
    eig = [1 / 3 + 2 / 3 * math.cos(2 * math.pi * k / n) for k in range(1, n)]
    return 1 - max(abs(e) for e in eig)


def crossover():
    """Exercise 2: the fewest workers n for which 2 (alpha + M beta) < 2 (n-1) (alpha + M beta / n)."""
    M, alpha, beta = 4e6, 30e-6, 8 / 10e9
    gossip = 2 * (alpha + M * beta)              # the whole model to each of two neighbours, in turn

    def allreduce(n):
        return 2 * (n - 1) * (alpha + M * beta / n)

    n = 3
    while not gossip < allreduce(n):
        n += 1
    return n


def choco_step():
    """Exercise 3: ``step(x, x_hat, w, gamma, q)``, one CHOCO-Gossip step on the n x D models."""
    import torch

    def step(x, x_hat, w, gamma, q):
        diff = x - x_hat
        x_hat = x_hat + torch.stack([q(row).to(x.dtype) for row in diff])  # q_i = Q(x_i - x_hat_i)
        x = x + gamma * (w @ x_hat - x_hat)                                 # move towards the neighbours' copies
        return x, x_hat
    return step
