"""What every architecture is (``Trainer(arch=...)``): who talks to whom, and what it declares.

An architecture builds each rank's :class:`~commlab.arch.exchange.Exchange` and says, before any
rank starts, what it offers. The Trainer never asks which architecture it holds: the rulebook
(:mod:`commlab.rules`) reads these declarations and decides whether a combination runs.

* ``provides``: the services its exchange offers a synchronizer (:data:`SERVICES`):
  ``"step"`` (average this step's gradients and apply them), ``"average"`` (average any tensors:
  models, for local SGD), ``"server"`` (a parameter server that runs the synchronizer's policy:
  asynchronous steps), ``"neighbours"`` (average with the neighbours of a graph: gossip);
* ``decodes``: where compressed payloads are decoded (:data:`DECODERS`): ``"together"`` (every
  rank combines every payload, so a compressor's own all-reduce protocol runs), ``"each"`` (a
  receiver decodes each payload alone: a server, a neighbour), or ``"none"`` (it carries no
  compression: the switch's fixed point, ZeRO's shards);
* ``replies``: it has server replies that ``reply_compress`` may compress;
* ``schedulable``: its exchange can send a schedule's messages during backward, and
  ``schedules_compressed``: compressed ones too;
* ``needs_policy``: the synchronizer must give it a server policy (``sync.server_policy()``);
* ``compresses_per``: how its exchange can cut compressed messages (:data:`commlab.spec.COMPRESS_PER`):
  ``"bucket"``, the fused buffer (or its pieces: a server's shards, a schedule's buckets) compressed
  as one tensor, which every architecture that carries compression does; ``"tensor"`` too where
  it can send each parameter tensor as its own compressed message (an all-reduce).

The base class answers the questions of the rank layout for the common case of one rank per
worker and no server rank (``world_size``, ``serves``, ``serve``); ``check_workers`` refuses a
number of workers the architecture cannot hold (a topology that needs more nodes).
"""
from __future__ import annotations

SERVICES = ("step", "average", "server", "neighbours")
DECODERS = ("together", "each", "none")


class Architecture:
    """Base class of an architecture: subclasses set ``name`` and the declarations of the module doc,
    and implement ``exchange`` and ``time``."""

    name = "architecture"
    provides = frozenset({"step", "average"})
    decodes = "together"
    replies = False
    schedulable = False
    schedules_compressed = False
    needs_policy = False
    compresses_per = ("bucket",)

    def check_workers(self, workers: int) -> None:
        """Raise ValueError if this architecture cannot hold ``workers`` workers (default: any number)."""

    def check_policy(self, policy) -> None:
        """Raise ValueError if the synchronizer's server policy cannot run here (``needs_policy``)."""

    def world_size(self, workers: int) -> int:
        """Ranks to launch: one per worker, no extra ranks."""
        return workers

    def serves(self, rank: int, workers: int) -> bool:
        """Whether ``rank`` runs only a server loop (:meth:`serve`); no rank does by default."""
        return False

    def serve(self, comm, model, optimizer, setup):
        """A server rank's loop; an architecture with no server ranks has none: ValueError."""
        raise ValueError(f"arch={self.name!r} has no server ranks")

    def exchange(self, comm, model, optimizer, setup):
        """This worker rank's exchange (subclasses implement it)."""
        raise NotImplementedError

    def time(self, nbytes: float, workers: int, link, network=None) -> float:
        """Closed-form seconds of one exchange of ``nbytes`` on ``link`` (subclasses implement it)."""
        raise NotImplementedError
