"""What every synchronizer is: one rule for *when* workers agree, run one step at a time.

Each step the Trainer calls ``sync.round(worker)`` (:class:`commlab.worker.Worker`): the rule
may call ``worker.gradient()`` as often as it likes, agree with the other workers through
``worker.exchange`` (average gradients and step, ``exchange.step(model, optimizer)``; average
models, ``exchange.average(tensors)``; :mod:`commlab.arch.exchange`), or talk over
``worker.comm`` itself (FedAvg's star, Hogwild's shared memory), and returns {"loss": ...}
(NaN if this worker did not train), optionally "staleness" and "samples".

What a rule tells the Trainer before any rank starts:

* ``server_policy()``: the parameter-server policy it runs with over ``arch="ps"``, or None
  if it does not run over a server; ``needs_server``: it only runs over one (ASP, SSP, ...),
  so ``arch="native"`` becomes ``"ps"`` (``default_arch``); ``needs_gossip``: it averages with
  neighbours only (:mod:`commlab.decentral`), so ``"native"`` becomes ``"gossip"``;
* ``check(config)``: refuse options the rule cannot honour, with the reason;
* ``schedulable``: it averages one step's gradients in one exchange.step, which a schedule
  (:mod:`commlab.schedule`) may cut into messages overlapped with backward (BSP);
* ``shared_state(build)`` / ``bind(state)``: state shared by all ranks of one process
  (Hogwild's parameter vector, from ``build()``, the run's initial model), built once before
  launch; None for message-passing rules.
"""
from __future__ import annotations


class Synchronizer:
    """Base class of a synchronization rule: ``round(worker)`` runs one step (see the module doc)."""
    name = "sync"
    needs_server = False
    needs_gossip = False  # it averages with neighbours only (commlab.decentral)
    default_arch = None  # the arch that replaces "native" for this rule ("ps", "gossip"), or None
    schedulable = False  # a schedule orders one step's gradient messages: BSP's step only

    def round(self, worker) -> dict:
        """One step on this worker; returns {"loss": ...}, optionally "staleness" and "samples"."""
        raise NotImplementedError

    def server_policy(self):
        """The parameter-server policy of this rule, or None (it does not run over a server)."""
        return None

    def check(self, config) -> None:
        """Raise ValueError for a Trainer option this rule cannot honour."""

    def shared_state(self, build):
        """State shared by every rank of the process, built once before launch from ``build()``
        (the run's initial model); None: none."""
        return None

    def start(self, steps: int) -> None:
        """Called on every rank before the first round with the run's number of steps."""

    def finish(self, worker) -> list[dict] | None:
        """Called on every rank after the last round: per step, records the rule could only make
        at the end (AD-PSGD's consensus and average model, :mod:`commlab.decentral.adpsgd`), or None."""
        return None

    def bind(self, shared) -> None:
        """Take the state :meth:`shared_state` built (called on every rank when it is not None)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
