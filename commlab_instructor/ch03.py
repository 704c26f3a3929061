"""Reference solutions of chapter 03: parameter servers and gossip."""
from __future__ import annotations

VARIABLES = {"check_server_bytes": "answer1", "check_min_servers": "answer2", "check_ring_gap": "answer3"}


def server_bytes():
    """Exercise 1: bytes into a single server per BSP step: N workers push 4D bytes each."""
    N, D = 16, 25.6e6
    return N * 4 * D


def min_servers():
    """Exercise 2: the fewest shards S whose BSP push/pull is within 10% of the ring (BERT-Base, 32, 10GbE)."""
    from commlab.arch import ring
    from commlab.arch.ps_layout import ps_sharded

    N, n, link = 32, 4 * 110e6, "10GbE"
    target = 1.10 * ring.cost(n, N, link)
    return next(S for S in range(1, 4 * N + 1) if ps_sharded(n, N, S, link) <= target)


def ring_gap():
    """Exercise 3: the spectral gap of a 12-node ring, from the circulant's eigenvalues."""
    import math

    n = 12
    eig = [1 / 3 + 2 / 3 * math.cos(2 * math.pi * k / n) for k in range(n)]   # k = 0 is the eigenvalue 1
    return 1 - max(abs(e) for e in eig[1:])
