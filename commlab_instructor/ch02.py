"""Reference solutions of chapter 02: all-reduce algorithms."""
from __future__ import annotations

VARIABLES = {"check_allreduce": "my_allreduce", "check_crossover": "answer", "check_ring_bytes": "answer"}


def allreduce():
    """Exercise 1: ``my_allreduce(comm, x)``, a ring: reduce-scatter, then all-gather, with isend/recv."""
    import torch

    def my_allreduce(comm, x):
        n, r = comm.world_size, comm.rank
        right, left = (r + 1) % n, (r - 1) % n
        chunks = torch.tensor_split(x, n)   # views of x: adding into one changes x
        for s in range(n - 1):              # reduce-scatter: rank r ends with chunk r + 1 summed
            work = comm.isend(chunks[(r - s) % n], right)
            chunks[(r - s - 1) % n].add_(comm.recv(left))
            work.wait()
        for s in range(n - 1):              # all-gather: pass the summed chunks around
            work = comm.isend(chunks[(r + 1 - s) % n], right)
            chunks[(r - s) % n].copy_(comm.recv(left))
            work.wait()
        return x
    return my_allreduce


def crossover():
    """Exercise 2: the size n (bytes) where tree (4 segments) and ring take equal time, N = 64, 10GbE."""
    import math
    from commlab.arch import ring, tree
    from commlab.net import PROFILES

    p, s, link = 64, 4, PROFILES["10GbE"]
    r, d = tree.tree_fill(p)
    k = 4 * (s - 1) + r + d                           # tree: k (alpha + n beta / s)
    a_tree, b_tree = k * link.alpha, k * link.beta / s
    a_ring, b_ring = 2 * (p - 1) * link.alpha, 2 * (p - 1) * link.beta / p  # ring: 2(p-1)(alpha + n beta / p)
    n = (a_ring - a_tree) / (b_tree - b_ring)
    assert math.isclose(tree.cost(n, p, link, s), ring.cost(n, p, link), rel_tol=1e-9)
    return n


def ring_bytes():
    """Exercise 3: bytes one rank sends in a ring all-reduce of 25.6e6 fp32 values on 32 ranks."""
    N, D = 32, 25.6e6
    return 2 * (N - 1) * (4 * D / N)      # 2(N-1) messages of one chunk of 4D/N bytes
