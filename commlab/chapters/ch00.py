"""Chapter 00 (getting started): the rank functions the chapter runs on threads and on Gloo
processes. They live in a module, not in the notebook's cells, because on a machine with a GPU
Gloo's rank processes are not forked from the notebook (:func:`commlab.runtime.fork_is_safe`):
a fresh process imports each function by its name, which a function from a cell does not have."""
from __future__ import annotations

import torch


def collectives(comm):
    """The four collectives once each; every rank returns what it ended with."""
    r = comm.rank
    x = torch.tensor([1.0, 2.0, 3.0]) * (r + 1)          # rank r holds (r+1) * [1, 2, 3]
    comm.all_reduce(x, op="sum")
    m = comm.all_reduce(torch.tensor([float(r)]), op="max")
    g = comm.all_gather(torch.tensor([10 * r]))
    b = torch.tensor([7.0, 8.0]) if r == 1 else torch.zeros(2)
    comm.broadcast(b, src=1)
    comm.barrier()
    return {"all_reduce(sum)": x.tolist(), "all_reduce(max)": m.item(),
            "all_gather": torch.cat(g).tolist(), "broadcast from 1": b.tolist()}


def ring_pass(comm, x):
    """Send every rank's tensor once around the ring; return all of them, indexed by rank."""
    right = (comm.rank + 1) % comm.world_size
    left = (comm.rank - 1) % comm.world_size
    blocks = [None] * comm.world_size
    blocks[comm.rank] = token = x
    for step in range(1, comm.world_size):
        work = comm.isend(token, right)   # start sending, do not wait for it...
        token = comm.recv(left)           # ...and take what the left neighbour sent
        work.wait()
        blocks[(comm.rank - step) % comm.world_size] = token
    return blocks


def ring_vs_native(comm):
    """The hand-written ring pass beside the native all_gather: the same blocks? and the
    traffic and simulated time of each."""
    x = torch.full((250,), float(comm.rank))    # 250 fp32 values = 1,000 bytes
    s0, t0 = comm.stats.snapshot(), comm.now
    mine = ring_pass(comm, x)
    s1, t1 = comm.stats.snapshot(), comm.now
    native = comm.all_gather(x)
    s2, t2 = comm.stats.snapshot(), comm.now
    return {"same": all(torch.equal(a, b) for a, b in zip(mine, native)),
            "ring": s1 - s0, "native": s2 - s1, "t_ring": t1 - t0, "t_native": t2 - t1}


def fragile(comm):
    """Rank 2 raises while the others wait for it in a barrier."""
    x = torch.ones(3)
    comm.all_reduce(x)
    if comm.rank == 2:
        raise ValueError("found a NaN in my gradient")
    comm.barrier()            # the other ranks wait here for rank 2, which never comes
    return x
