"""Reference solutions of chapter 00: ranks, Comm, counters and the simulated clock."""
from __future__ import annotations

VARIABLES = {"check_ring_sum": "my_fn", "check_allreduce_bytes": "answer", "check_pingpong_time": "answer"}


def ring_sum():
    """Exercise 1: ``my_fn(comm)``, the sum of rank + 1 over the ranks, passed around the ring."""
    import torch

    def my_fn(comm):
        n, r = comm.world_size, comm.rank
        total = torch.tensor(float(r + 1))
        token = total.clone()
        for _ in range(n - 1):          # as ring_pass: send to the right, take from the left
            work = comm.isend(token, (r + 1) % n)
            token = comm.recv((r - 1) % n)
            work.wait()
            total += token
        return total
    return my_fn


def allreduce_bytes():
    """Exercise 2: bytes one rank sends in an all-reduce of 10^6 fp32 values on 4 ranks (measured)."""
    import torch
    import commlab

    N, numel = 4, 1_000_000
    worked_out = 2 * (N - 1) / N * 4 * numel      # the ring's 2(N-1)/N of the tensor's bytes

    def allreduce_traffic(comm, numel):
        before = comm.stats.snapshot()
        comm.all_reduce(torch.ones(numel))
        return comm.stats - before

    measured = commlab.launch(allreduce_traffic, N, args=(numel,))[0].bytes_sent
    assert measured == worked_out
    return measured


def pingpong_time():
    """Exercise 3: seconds of a 1 MB round trip on 10GbE, two messages of alpha + n beta."""
    from commlab.net import PROFILES

    link = PROFILES["10GbE"]
    return 2 * (link.alpha + 1e6 * link.beta)
