"""The architectures a Trainer composes (``Trainer(arch=...)``): who talks to whom.

Each is an :class:`~commlab.arch.base.Architecture`: it declares what its exchange offers
(``provides``, ``decodes``, ``replies``, ``schedulable``; the rulebook :mod:`commlab.rules` reads
them before any rank starts) and answers the same few questions, so the Trainer never asks which
one it holds:

* ``world_size(workers)``: ranks to launch; ``serves(rank, workers)``: is this rank a server
  only (it runs :meth:`serve` instead of training);
* ``exchange(comm, model, optimizer, setup)``: the worker rank's
  :class:`~commlab.arch.exchange.Exchange`; ``serve(comm, model, optimizer, setup)``: a server
  rank's loop. ``setup`` is an :class:`ExchangeSetup`.
* ``time(nbytes, workers, link)``: closed-form seconds of one exchange of ``nbytes``.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

from ..flat import flatten
from . import collectives
from .base import Architecture
from .exchange import AllReduceExchange, ScheduledServerExchange, ServerExchange
from .ps import PSClient, run_server, trainable
from .ps_scheduled import ScheduledPSClient, run_scheduled_server
from .ps_codec import PSCodec
from .ps_layout import ServerPlacement, check_count, ps_colocated, ps_sharded
from .ps_policy import check_shards, get_policy


@dataclass
class ExchangeSetup:
    """What a rank's exchange is built from: ``workers`` (worker ranks), ``compressor`` (this
    rank's, or None), ``reply`` (a parameter server's reply compressor, or None) and
    ``policy`` (the synchronizer's server policy, or None); ``messages``: a schedule's messages
    of a step, each a list of [start, stop) ranges of the flat parameter vector, in send order
    (None: unscheduled), which a parameter server needs before its first push; ``compress_per``:
    how compressed gradients are cut into messages (the Trainer's option, :mod:`commlab.arch.exchange`),
    which an architecture that declares ``compresses_per=("bucket",)`` need not read."""

    workers: int
    compressor: object = None
    reply: object = None
    policy: object = None
    messages: list | None = None
    compress_per: str = "bucket"


class AllReduce(Architecture):
    """One all-reduce algorithm of :mod:`commlab.arch.collectives` with its keyword arguments:
    ``AllReduce("ring", segments=4)``. Bad arguments fail here, at construction. Every rank is a
    worker; every rank combines every payload, so any compressor runs over it, and a schedule's
    messages, compressed or not; compressed gradients go as the fused buffer (or a schedule's
    buckets) or one message per tensor (``compress_per``)."""

    provides = frozenset({"step", "average"})
    decodes = "together"
    schedulable = schedules_compressed = True
    compresses_per = ("bucket", "tensor")

    def __init__(self, algorithm: str = "ring", **kw):
        if algorithm not in collectives.ALGORITHMS:
            raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; valid: {', '.join(collectives.ALGORITHMS)}")
        fn = collectives.ALGORITHMS[algorithm]
        if fn is None and kw:
            raise TypeError(f"the native all-reduce takes no keyword arguments, got {', '.join(kw)}")
        if fn is not None:
            inspect.signature(fn).bind(None, None, **kw)  # TypeError for an unknown or missing argument
        self.name, self.kw = algorithm, kw

    def allreduce(self, comm, tensor, op: str = "sum"):
        """Run this algorithm on ``tensor`` over ``comm`` with reduction ``op`` and its keyword arguments."""
        return collectives.allreduce(comm, tensor, self.name, op, **self.kw)

    def exchange(self, comm, model, optimizer, setup: ExchangeSetup) -> AllReduceExchange:
        """This worker's :class:`AllReduceExchange` over the algorithm, with the run's compressor."""
        return AllReduceExchange(comm, self, setup.compressor, setup.compress_per)

    def time(self, nbytes: float, workers: int, link, network=None) -> float:
        """Closed-form seconds of one all-reduce of ``nbytes`` on ``link``. An algorithm whose cost
        reads the node structure (``group_size``, ``intra_link``: the hierarchical one) takes what
        its spec does not give from the run's ``network``, as the run itself does: its
        ``ranks_per_node`` and ``intra_link``, else every message on ``link``."""
        kw = dict(self.kw)
        needs = inspect.signature(collectives.COSTS[self.name]).parameters if self.name in collectives.COSTS else {}
        if "intra_link" in needs:
            kw.setdefault("intra_link", getattr(network, "intra_link", None) or link)
        if "group_size" in needs and kw.get("group_size") is None:
            kw["group_size"] = getattr(network, "ranks_per_node", None)
            if kw["group_size"] is None:
                raise ValueError(f"{self.name} all-reduce needs group_size= (ranks per node), or a run whose "
                                 "Network(ranks_per_node=...) says it")
        return collectives.cost(nbytes, workers, link, self.name, **kw)

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.kw.items())
        return f"AllReduce({self.name!r}{args})"


class ParameterServer(Architecture):
    """``ps``, ``ps(shards=4)``, ``ps(shards=2, colocated=True)``: see :mod:`commlab.arch.ps`.
    The servers own the parameters and run the workers' optimizer settings (lr, momentum,
    weight decay) under the synchronizer's policy (``needs_policy``). A server decodes each push
    alone (``decodes="each"``) and may compress its replies; co-located servers carry no
    compression; a schedule's messages go to extra server ranks, uncompressed. A push is the
    fused gradient's piece for one shard, compressed as one tensor keyed by the shard (a reply
    likewise), so compression is per bucket only (``compresses_per``; the rulebook refuses
    ``compress_per="tensor"``): one compressed message per shard and step, as BytePS's
    compression works on its partitions."""

    name = "ps"
    provides = frozenset({"step", "server"})
    decodes = "each"  # co-located servers: "none" (set per instance)
    replies = needs_policy = schedulable = True  # a schedule's messages go to extra server ranks only

    def __init__(self, shards: int = 1, colocated: bool = False):
        check_count("shards", shards)
        if not isinstance(colocated, bool):
            raise ValueError(f"colocated must be True or False, got {colocated!r}")
        self.shards, self.colocated = shards, colocated
        self.decodes = "none" if colocated else "each"
        self.schedulable = not colocated

    def layout(self, workers: int) -> ServerPlacement:
        """Where ``workers`` workers and this architecture's shards sit on the ranks."""
        return ServerPlacement(workers, self.shards, self.colocated)

    def check_policy(self, policy) -> None:
        """The synchronizer's server policy runs on these shards (:func:`~commlab.arch.ps_policy.check_shards`)."""
        check_shards(get_policy(policy), self.shards)

    def world_size(self, workers: int) -> int:
        """Ranks to launch for ``workers`` workers."""
        return self.layout(workers).world_size

    def serves(self, rank: int, workers: int) -> bool:
        """Whether ``rank`` runs only a server loop (:meth:`serve`) rather than a worker."""
        return rank >= workers and self.layout(workers).shard_of(rank) is not None

    def _sgd(self, model, optimizer, setup: ExchangeSetup) -> dict:
        group = optimizer.param_groups[0]
        return dict(params=flatten(p.detach() for p in trainable(model)), workers=setup.workers, lr=group["lr"],
                    momentum=group["momentum"], weight_decay=group["weight_decay"], policy=setup.policy)

    def serve(self, comm, model, optimizer, setup: ExchangeSetup) -> dict:
        """A server rank's loop (scheduled or plain, with the run's codec) until every worker leaves;
        returns its record."""
        if setup.messages is not None:
            kw = self._sgd(model, optimizer, setup)
            del kw["policy"]
            return run_scheduled_server(comm, shards=self.shards, messages=setup.messages, **kw)
        codec = PSCodec(setup.compressor, setup.reply)
        return run_server(comm, shards=self.shards, codec=codec, **self._sgd(model, optimizer, setup))

    def exchange(self, comm, model, optimizer, setup: ExchangeSetup) -> ServerExchange:
        """This worker's side: a :class:`ServerExchange` over a PSClient, or the scheduled one."""
        if setup.messages is not None:
            total = sum(p.numel() for p in trainable(model))
            return ScheduledServerExchange(ScheduledPSClient(comm, setup.workers, self.shards, setup.messages, total))
        codec = PSCodec(setup.compressor, setup.reply)
        client = PSClient(comm, shards=self.shards, colocated=self.colocated, codec=codec,
                          **self._sgd(model, optimizer, setup))
        return ServerExchange(client, setup.compressor)

    def time(self, nbytes: float, workers: int, link, network=None) -> float:
        """Closed-form seconds of one BSP push/pull of ``nbytes`` (:mod:`commlab.arch.ps_layout`); the run's
        ``network`` does not enter: every message is on ``link``."""
        if self.colocated:
            return ps_colocated(nbytes, workers, self.shards, link)
        return ps_sharded(nbytes, workers, self.shards, link)

    def __repr__(self) -> str:
        return f"ParameterServer(shards={self.shards}, colocated={self.colocated})"
