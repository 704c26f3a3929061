"""What every synchronizer is: one rule for *when* workers agree, run one step at a time.

Each step the Trainer calls ``sync.round(worker)`` (:class:`commlab.worker.Worker`): the rule
may call ``worker.gradient()`` as often as it likes, agree with the other workers through
``worker.exchange`` (average gradients and step, ``exchange.step(model, optimizer)``; average
models, ``exchange.average(tensors)``; :mod:`commlab.arch.exchange`), or talk over
``worker.comm`` itself (FedAvg's star, Hogwild's shared memory), and returns {"loss": ...}
(NaN if this worker did not train), optionally "staleness" and "samples".

What a rule declares before any rank starts (the rulebook, :mod:`commlab.rules`, reads it):

* ``needs``: the services it uses from the architecture's exchange (:data:`commlab.arch.base.SERVICES`):
  ``{"step"}`` (BSP), ``{"step", "average"}`` (local SGD averages models), ``{"server"}`` (ASP, SSP,
  ... run a parameter-server policy), ``{"neighbours"}`` (the decentralized rules of
  :mod:`commlab.decentral`); ``takes_arch = False``: it talks over ``worker.comm`` itself
  (FedAvg's star, Hogwild's shared memory) and takes no ``arch``; ``default_arch``: the arch
  that replaces ``"native"`` for it (``"ps"``, ``"gossip"``);
* ``server_policy()``: the parameter-server policy it runs with over ``arch="ps"``, or None;
* ``compresses``: it can send compressed messages (``compress=``); ``decodes``: for a rule that
  talks over comm itself, how its receiver decodes payloads (``"weighted"``: each alone,
  weighted, as FedAvg's server does), else None (the architecture decodes); ``compresses_per``:
  for such a rule, how it can cut its compressed messages (``"bucket"``: the fused vector as one
  tensor; ``"tensor"``: each parameter its own; :data:`commlab.spec.COMPRESS_PER`);
* ``schedulable``: it averages one step's gradients in one exchange.step, which a schedule
  (:mod:`commlab.schedule`) may cut into messages overlapped with backward (BSP);
* ``takes_momentum``: the Trainer's momentum applies (Hogwild's shared update has none);
  ``runtimes``: the runtimes it runs on (None: any);
* ``check(config)``: refuse its own arguments where they do not fit the run (backups >= workers);
* ``shared_state(build)`` / ``bind(state)``: state shared by all ranks of one process
  (Hogwild's parameter vector, from ``build()``, the run's initial model), built once before
  launch; None for message-passing rules.
"""
from __future__ import annotations


class Synchronizer:
    """Base class of a synchronization rule: ``round(worker)`` runs one step (see the module doc)."""
    name = "sync"
    needs = frozenset({"step"})  # services of the architecture's exchange (module doc)
    takes_arch = True  # False: it talks over comm itself and takes no arch
    default_arch = None  # the arch that replaces "native" for this rule ("ps", "gossip"), or None
    compresses = True  # it can send compressed messages
    decodes = None  # for a rule that takes no arch: how its receiver decodes payloads
    compresses_per = ("bucket",)  # for a rule that takes no arch: how it can cut compressed messages
    schedulable = False  # a schedule orders one step's gradient messages: BSP's step only
    takes_momentum = True
    runtimes = None  # the runtimes it runs on; None: any

    def round(self, worker) -> dict:
        """One step on this worker; returns {"loss": ...}, optionally "staleness" and "samples"."""
        raise NotImplementedError

    def server_policy(self):
        """The parameter-server policy of this rule, or None (it does not run over a server)."""
        return None

    def check(self, config) -> None:
        """Raise ValueError where the rule's own arguments do not fit the run (the combination of
        dimensions is the rulebook's, :mod:`commlab.rules`)."""

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
