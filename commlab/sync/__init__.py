"""Synchronization: when workers agree.

Every synchronizer is a :class:`~commlab.sync.base.Synchronizer`: ``round(worker)`` is one
step of the History (see :class:`commlab.worker.Worker`); it agrees with the other workers
through the exchange its architecture built; those that run over a parameter server give it
a policy (``server_policy()``; the asynchronous ones are in :mod:`commlab.sync.server_policies`).

* bsp: average the gradients every step (all-reduce or parameter server).
* asp, ssp(staleness), backup(backups), round_robin: parameter-server policies.
* hogwild: lock-free shared memory (threads runtime).
* local_sgd(period), post_local_sgd(switch, period): average the models every H steps.
* fedavg(fraction, epochs, local_steps): federated averaging over a client sample.
* dynamic_batch(growth, max_batch): BSP with a growing batch.

A new one is a ``Synchronizer`` subclass and one line, :func:`register_sync`.

Beyond SGD, :func:`consensus_admm` runs asynchronous consensus ADMM (Zhang and Kwok 2014) on
logistic regression, with its own master and workers.
"""
from __future__ import annotations

from ..spec import Registry
from .admm import consensus_admm
from .async_ps import ASP, SSP, Backup, RoundRobin
from .bsp import BSP
from .dynamic_batch import DynamicBatch
from .fedavg import FedAvg
from .hogwild import Hogwild
from .local_sgd import LocalSGD, PostLocalSGD

SYNCS = Registry("synchronization")


def register_sync(cls) -> None:
    """The one line that adds a synchronizer: a :class:`~commlab.sync.base.Synchronizer` subclass,
    built from specs by its ``name`` (``Trainer(sync=name)``, ``python -m commlab train --sync``);
    the rulebook reads its declarations. ValueError for a name already taken or a class without one."""
    name = getattr(cls, "name", None)
    if not isinstance(cls, type) or not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        raise ValueError(f"a synchronizer is a class with a lower-case identifier as its name, got {cls!r}")
    if name in SYNCS.builders:
        raise ValueError(f"synchronizer {name!r} is already registered; registered: {', '.join(SYNCS.names())}")
    SYNCS.register(name, cls)


for _cls in (BSP, ASP, SSP, Backup, RoundRobin, Hogwild, LocalSGD, PostLocalSGD, FedAvg, DynamicBatch):
    register_sync(_cls)


def get(spec="bsp"):
    """A synchronizer from a spec such as "bsp" or "ssp(staleness=2)"."""
    return SYNCS.build(spec)
