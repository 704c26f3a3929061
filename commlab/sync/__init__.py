"""Synchronization: when workers agree. This edition has BSP; the others arrive with
chapters 04 and 05 (issue 4)."""
from __future__ import annotations

from ..spec import Registry
from .bsp import BSP

SYNCS = Registry("synchronization")
SYNCS.register("bsp", BSP)
SYNCS.plan(["ssp", "asp", "hogwild", "backup", "local_sgd", "post_local_sgd", "fedavg", "round_robin"],
           "synchronization chapters, issue 4")


def get(spec="bsp"):
    """A synchronizer from a spec such as "bsp" or "ssp(staleness=2)"."""
    return SYNCS.build(spec)
