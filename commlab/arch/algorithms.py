"""The all-reduce algorithms that run over one flat group of ranks, by name, each with its
closed-form cost beside it.

==================  ====================================  ===============================
name                run (comm, x, op, ranks=, tag=, ...)  cost (n, p, link, ...)
==================  ====================================  ===============================
naive               :func:`.naive.allreduce`              :func:`.naive.cost`
ring                :func:`.ring.allreduce`               :func:`.ring.cost`
tree                :func:`.tree.allreduce`               :func:`.tree.cost`
double_tree         :func:`.tree.double_tree_allreduce`   :func:`.tree.double_tree_cost`
halving_doubling    :func:`.halving_doubling.allreduce`   :func:`.halving_doubling.cost`
==================  ====================================  ===============================

:mod:`.hierarchical` runs one of these across node leaders, and :mod:`.collectives` adds
the runtime's native all-reduce and the hierarchical one to make the full table.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from . import halving_doubling, naive, ring, tree


class Algorithm(NamedTuple):
    """One all-reduce algorithm: ``run``, the function that runs it over Comm, and ``cost``, its closed form."""
    run: Callable
    cost: Callable


FLAT = {
    "naive": Algorithm(naive.allreduce, naive.cost),
    "ring": Algorithm(ring.allreduce, ring.cost),
    "tree": Algorithm(tree.allreduce, tree.cost),
    "double_tree": Algorithm(tree.double_tree_allreduce, tree.double_tree_cost),
    "halving_doubling": Algorithm(halving_doubling.allreduce, halving_doubling.cost),
}


def flat(name: str) -> Algorithm:
    """The flat algorithm called ``name``, or a ValueError listing the valid names."""
    if name not in FLAT:
        raise ValueError(f"unknown flat all-reduce algorithm {name!r}; valid: {', '.join(FLAT)}")
    return FLAT[name]
