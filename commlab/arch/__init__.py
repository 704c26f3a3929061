"""Architectures: who talks to whom (all-reduce algorithms, parameter servers, gossip).

For ``Trainer(arch=...)``: the runtime's native all-reduce ("native"), all-reduce
algorithms written from send/recv (:mod:`.collectives`: "naive", "ring", "tree",
"double_tree", "halving_doubling", "hierarchical(group_size=4)"), and parameter servers
(:mod:`.ps`: "ps", "ps(shards=4)", "ps(shards=2, colocated=True)"), in-network aggregation
(:mod:`.switch`: "switchml", "switchml(slots=8, elements=64)", a switch rank after the workers;
its closed form :mod:`.innetwork`), as the objects of
:mod:`.architectures`; each builds a rank's exchange (:mod:`.exchange`), what synchronizers
call. A new all-reduce is one line, :func:`register_allreduce` (the registry:
:mod:`.algorithms`). Compressed payloads are aggregated in :mod:`.aggregate`. Gossip, averaging with
neighbours only, is :mod:`commlab.decentral`, which registers ``"gossip"`` here.
"""
from __future__ import annotations

from functools import partial

from ..spec import Registry
from .algorithms import register, slowest_hop
from .architectures import AllReduce, ExchangeSetup, ParameterServer
from .collectives import ALGORITHMS, all_gather, allreduce, reduce_scatter
from .switch import InNetwork

ARCHITECTURES = Registry("architecture")
for _name in ALGORITHMS:
    ARCHITECTURES.register(_name, partial(AllReduce, _name))
ARCHITECTURES.register("ps", ParameterServer)
ARCHITECTURES.register("switchml", InNetwork)


def register_allreduce(name: str, run, cost, *, on_cluster=None, program=None):
    """The one line that adds an all-reduce everywhere: ``run(comm, x, op, ranks=None, tag=0,
    ...)`` runs it (``Trainer(arch=name)``, compressed aggregation), ``cost(n, p, link, ...)`` is
    its closed form (:func:`.collectives.cost`, the inference model, the Trainer's planning),
    ``on_cluster(n, cluster)`` its seconds on a ``sim.Cluster`` (``sim.Cluster(allreduce=name)``;
    :func:`.algorithms.slowest_hop` for the ring's rule; None: not simulated) and
    ``program(n, cluster)`` its messages as rounds of (src, dst, bytes) for the simulator's
    message level (:mod:`.rounds`; None: closed form only). See :mod:`.algorithms`."""
    algorithm = register(name, run, cost, on_cluster=on_cluster, program=program)
    ARCHITECTURES.register(name, partial(AllReduce, name))
    return algorithm


def get(spec="native"):
    """An architecture object from a spec string such as "ring" or "ps(shards=4)"."""
    return ARCHITECTURES.build(spec)


__all__ = ["ARCHITECTURES", "AllReduce", "register_allreduce", "slowest_hop", "ExchangeSetup", "InNetwork", "ParameterServer", "all_gather", "allreduce", "get",
           "reduce_scatter"]
