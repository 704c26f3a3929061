"""Architectures: who talks to whom (all-reduce algorithms, parameter servers, gossip).

For ``Trainer(arch=...)``: the runtime's native all-reduce, all-reduce algorithms written
from send/recv (:mod:`.collectives`), and parameter servers (:mod:`.ps`). Gossip
(:mod:`.gossip`, :mod:`.topology`) averages with neighbours only; it trains as D-PSGD.
"""
from __future__ import annotations

from ..spec import Registry
from .ps import ParameterServer


class NativeAllReduce:
    """The runtime's own all-reduce (torch.distributed's, or the threads rendezvous)."""

    name = "native"

    def allreduce(self, comm, tensor, op: str = "sum"):
        return comm.all_reduce(tensor, op=op)

    def __repr__(self) -> str:
        return "NativeAllReduce()"


ARCHITECTURES = Registry("architecture")
ARCHITECTURES.register("native", NativeAllReduce)
ARCHITECTURES.register("ps", ParameterServer)
ARCHITECTURES.plan(["ring", "tree", "double_tree", "halving_doubling", "hierarchical", "naive"],
                   "architectures chapter, issue 3")
ARCHITECTURES.plan(["gossip"], "gossip averaging trains as D-PSGD: decentralized chapter")


def get(spec="native"):
    """An architecture object from a spec string such as "native" or "ps(shards=4)"."""
    return ARCHITECTURES.build(spec)
