"""Architectures: who talks to whom (all-reduce algorithms, parameter servers, gossip).

This edition has the runtime's native all-reduce; the algorithms written from
send/recv arrive with the architectures chapter (02, 03).
"""
from __future__ import annotations

from ..spec import Registry


class NativeAllReduce:
    """The runtime's own all-reduce (torch.distributed's, or the threads rendezvous)."""

    name = "native"

    def allreduce(self, comm, tensor, op: str = "sum"):
        return comm.all_reduce(tensor, op=op)

    def __repr__(self) -> str:
        return "NativeAllReduce()"


ARCHITECTURES = Registry("architecture")
ARCHITECTURES.register("native", NativeAllReduce)
ARCHITECTURES.plan(["ring", "tree", "double_tree", "halving_doubling", "hierarchical", "naive", "ps", "gossip"],
                   "architectures chapter, issue 3")


def get(spec="native"):
    """An architecture object from a spec string such as "native" or "ps(shards=4)"."""
    return ARCHITECTURES.build(spec)
