"""A toy all-reduce, gather to rank 0 and broadcast back, written from comm.send/recv alone.

Every other rank sends its whole vector to the group's first rank, which combines them in rank
order and sends the result back: 2 (p-1) messages of n bytes through one rank's link,
T = 2 (p-1) (alpha + n beta), as :mod:`commlab.arch.naive` (the oracle it is tested against).
On a cluster it takes the ring's slowest-hop rule, and its program is two rounds."""
import numpy as np
import torch

from commlab.arch import register_allreduce, slowest_hop
from commlab.net.link import get_link

NAME = "gather_bcast"
OPS = {"sum": torch.add, "prod": torch.mul, "max": torch.maximum, "min": torch.minimum}


def run(comm, x, op="sum", ranks=None, tag=0):
    """All-reduce the flat tensor ``x`` in place over ``ranks`` (all by default)."""
    ranks = list(range(comm.world_size)) if ranks is None else list(ranks)
    root = ranks[0]
    if comm.rank != root:
        comm.send(x, root, tag)
        return comm.recv(root, tag, out=x)
    for src in ranks[1:]:
        x.copy_(OPS[op](x, comm.recv(src, tag)))
    for dst in ranks[1:]:
        comm.send(x, dst, tag)
    return x


def cost(n, p, link):
    """Seconds: 2 (p - 1) T(n) on ``link``."""
    return 2 * (p - 1) * get_link(link).time(n)


def program(n, cluster):
    """Two rounds: every GPU but 0 sends n bytes to GPU 0; GPU 0 sends n bytes to each."""
    others = np.arange(1, cluster.gpus)
    root = np.zeros_like(others)
    return [(others, root, n), (root, others, n)]


def register():
    return register_allreduce(NAME, run, cost, on_cluster=slowest_hop(cost), program=program)
