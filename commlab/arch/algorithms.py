"""The one registry of all-reduce algorithms: each registered once, read by every part of the
library that runs or times an all-reduce.

An entry gives up to four things:

* ``run(comm, x, op, ranks=, tag=, ...)``: the algorithm over :class:`~commlab.runtime.comm.Comm`
  (the Trainer's ``arch=<name>``, compressed aggregation, :func:`commlab.arch.collectives.allreduce`);
* ``cost(n, p, link, ...)``: its closed form in seconds (:func:`commlab.arch.collectives.cost`,
  chapter 02's figures, the inference model, the Trainer's planning);
* ``on_cluster(n, cluster)``: seconds on a ``sim.Cluster`` of nodes with an intra- and an
  inter-node link (``sim.Cluster(allreduce=<name>)``, ``sim.iteration``, the advisor), or None:
  not timed on a cluster. :func:`slowest_hop` is the ring's rule, for any algorithm whose steps
  each cross every kind of hop at once with one flow per network card;
* ``program(n, cluster)``: its point-to-point messages as rounds of (src, dst, bytes)
  (:mod:`.rounds`; ``sim.iteration(level="message")``), or None.

An algorithm is *flat* when its cost needs nothing but (n, p, link): it runs over any group of
ranks with one kind of link, so it can serve as the hierarchical all-reduce's ``inner`` and in
the inference model. The library's own:

==================  ======================================  ===============================  ===========
name                run                                     cost                             on a cluster
==================  ======================================  ===============================  ===========
naive               :func:`.naive.allreduce`                :func:`.naive.cost`
ring                :func:`.ring.allreduce`                 :func:`.ring.cost`               slowest hop, program
tree                :func:`.tree.allreduce`                 :func:`.tree.cost`
double_tree         :func:`.tree.double_tree_allreduce`     :func:`.tree.double_tree_cost`
halving_doubling    :func:`.halving_doubling.allreduce`     :func:`.halving_doubling.cost`
hierarchical        :func:`.hierarchical.allreduce`         :func:`.hierarchical.cost`       its own, program
==================  ======================================  ===============================  ===========

(hierarchical registers itself in :mod:`.hierarchical`, which runs a flat one across node
leaders.) Why the slowest-hop rule is not every algorithm's: halving-doubling, for one, sends
from every GPU of a node through the node's one card at once, which the rule does not charge.

A contributor registers with :func:`commlab.arch.register_allreduce`, which also makes the name
a Trainer architecture; modules of this package use :func:`register` (their Trainer names are
made when the package is imported).
"""
from __future__ import annotations

import inspect
from typing import Callable, NamedTuple

from . import halving_doubling, naive, ring, rounds, tree


class Algorithm(NamedTuple):
    """One all-reduce algorithm: ``run`` over Comm, ``cost`` its closed form, ``on_cluster`` its
    seconds on a two-level cluster (or None), ``program`` its messages as rounds (or None)."""
    run: Callable
    cost: Callable
    on_cluster: Callable | None = None
    program: Callable | None = None

    @property
    def flat(self) -> bool:
        """Whether the cost needs only (n, p, link): every other argument has a default."""
        params = list(inspect.signature(self.cost).parameters.values())[3:]
        return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


ALLREDUCES: dict[str, Algorithm] = {}


def register(name: str, run: Callable, cost: Callable, *, on_cluster: Callable | None = None,
             program: Callable | None = None) -> Algorithm:
    """Add ``name`` to :data:`ALLREDUCES`; ValueError for a name already taken (or "native", the
    runtime's own) or a part that is not callable."""
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        raise ValueError(f"an all-reduce's name is a lower-case identifier, got {name!r}")
    if name in ALLREDUCES or name == "native":
        raise ValueError(f"all-reduce {name!r} is already registered; registered: native, {', '.join(ALLREDUCES)}")
    for part, fn in (("run", run), ("cost", cost), ("on_cluster", on_cluster), ("program", program)):
        if (fn is None and part in ("run", "cost")) or (fn is not None and not callable(fn)):
            raise ValueError(f"all-reduce {name!r}: {part} must be a function, got {fn!r}")
    ALLREDUCES[name] = algorithm = Algorithm(run, cost, on_cluster, program)
    return algorithm


def names(part: str | None = None) -> list[str]:
    """Registered names, in registration order; with ``part`` ("flat", "on_cluster", "program")
    only those that have it."""
    if part is None:
        return list(ALLREDUCES)
    if part == "flat":
        return [k for k, a in ALLREDUCES.items() if a.flat]
    return [k for k, a in ALLREDUCES.items() if getattr(a, part) is not None]


def flat(name: str) -> Algorithm:
    """The flat algorithm called ``name``, or a ValueError listing the valid names."""
    if name not in ALLREDUCES or not ALLREDUCES[name].flat:
        raise ValueError(f"unknown flat all-reduce algorithm {name!r}; valid: {', '.join(names('flat'))}")
    return ALLREDUCES[name]


def slowest_hop(cost: Callable) -> Callable:
    """``on_cluster(n, cluster)`` for a flat algorithm run through all P GPUs, node after node,
    whose every step crosses each kind of hop at once, one flow per card: a step lasts as long
    as its slowest hop, so ``max(cost(n, P, link) for each kind of link crossed)`` (the ring's
    rule: :mod:`commlab.sim.cluster`)."""
    def on_cluster(n: float, cluster) -> float:
        return max(cost(n, cluster.gpus, link) for link in cluster.links())
    on_cluster.__doc__ = f"max over the cluster's kinds of link of {cost.__module__}.{cost.__qualname__}(n, P, link)"
    return on_cluster


register("naive", naive.allreduce, naive.cost)
register("ring", ring.allreduce, ring.cost, on_cluster=slowest_hop(ring.cost), program=rounds.ring_rounds)
register("tree", tree.allreduce, tree.cost)
register("double_tree", tree.double_tree_allreduce, tree.double_tree_cost)
register("halving_doubling", halving_doubling.allreduce, halving_doubling.cost)
