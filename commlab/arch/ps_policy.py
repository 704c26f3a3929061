"""Parameter-server policies: when a server applies a push and when it answers a pull.

The server loop of :mod:`commlab.arch.ps` is the same for every synchronization rule; a
policy answers its three questions. Under BSP (Valiant 1990; the PS form of Li et al. 2014)
server s, at step t::

    take the pushes g_w,t of all W workers (in the staggered order of commlab.net.cost.ps_sharded)
    x <- SGD(x, (1/W) sum_w g_w,t)
    answer every pull with x

An asynchronous policy names no worker in ``next_worker``, so the server takes whichever push
arrives first (``comm.recv_first``: first in simulated time on the threads runtime) and
decides from the per-worker clocks c_w (pushes taken from w):

* ASP (Dean et al. 2012): apply every push at once, x <- x - eta g_w, answer at once.
* SSP(s) (Ho et al. 2013): apply at once; answer w only while c_w - min_v c_v <= s, so no
  worker starts a step more than s steps ahead of the slowest.
* Backup workers(b) (Chen et al. 2016): step t averages the first W - b pushes computed on
  x_t; a push computed on an older x is dropped and answered with the newest x.
* Round-robin (Chen, Wang and Li, INFOCOM 2019): apply each push at once, taking the
  workers in a fixed cyclic order, so pushes never arrive at the server in a burst.

The staleness of an applied gradient is the number of updates the server made between the
worker's pull and the gradient's application (0 under BSP).
"""
from __future__ import annotations


class Policy:
    """When a server applies pushes and answers pulls. A server asks, around every message:

    * ``next_worker(server)``: whose message to take next; None takes whichever comes first.
    * ``should_apply(server)``: apply the pushes buffered so far (their average) now?
    * ``can_answer(server, worker)``: answer the pull of ``worker``, whose push is applied?
    * ``should_drop(server, worker)``: drop the push just taken from ``worker`` (answer it
      without applying it)?

    A server exposes ``shard``, ``shards``, ``workers``, ``clocks`` (pushes taken from each
    worker), ``live`` (workers that have not left), ``buffered`` ({worker: gradient} not yet
    applied) and ``waiting`` (workers whose pull is unanswered). The defaults are asynchronous:
    take any push, apply it at once, answer at once.
    """

    name = "policy"
    synchronous = False  # True: every worker's step t is applied together (co-located needs it)

    def next_worker(self, server):
        return None

    def should_apply(self, server) -> bool:
        return True

    def can_answer(self, server, worker: int) -> bool:
        return True

    def should_drop(self, server, worker: int) -> bool:
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class BSPPolicy(Policy):
    """Bulk synchronous: take step t's pushes in the staggered order, apply their average once
    all live workers have pushed, then answer every pull."""

    name = "bsp"
    synchronous = True

    def next_worker(self, server):
        behind = min(server.clocks[w] for w in server.live)
        return min((w for w in server.live if server.clocks[w] == behind),
                   key=lambda w: ((server.shard - w) % server.shards, w))

    def should_apply(self, server) -> bool:
        return server.live <= server.buffered.keys()


class ASPPolicy(Policy):
    """Asynchronous parallel: apply every push as it comes, answer at once."""

    name = "asp"


class SSPPolicy(Policy):
    """Stale synchronous parallel: apply at once; answer worker w only while
    c_w - min over live workers of c_v <= staleness."""

    name = "ssp"

    def __init__(self, staleness: int = 2):
        if not isinstance(staleness, int) or isinstance(staleness, bool) or staleness < 0:
            raise ValueError(f"staleness must be an integer >= 0, got {staleness!r}")
        self.staleness = staleness

    def can_answer(self, server, worker: int) -> bool:
        return server.clocks[worker] - min(server.clocks[v] for v in server.live) <= self.staleness

    def __repr__(self) -> str:
        return f"SSPPolicy(staleness={self.staleness})"


class BackupPolicy(Policy):
    """Backup workers: apply the average of the first W - b pushes computed on the current
    parameters (of all live workers when fewer are left); drop pushes computed on older ones."""

    name = "backup"

    def __init__(self, backups: int = 1):
        if not isinstance(backups, int) or isinstance(backups, bool) or backups < 0:
            raise ValueError(f"backups must be an integer >= 0, got {backups!r}")
        self.backups = backups

    def should_drop(self, server, worker: int) -> bool:
        return server.version[worker] < server.updates

    def should_apply(self, server) -> bool:
        if self.backups >= server.workers:
            raise ValueError(f"backups={self.backups} leaves no gradient to average with {server.workers} "
                             f"workers; use 0 <= backups < {server.workers}")
        return len(server.buffered) >= min(server.workers - self.backups, len(server.live))

    def __repr__(self) -> str:
        return f"BackupPolicy(backups={self.backups})"


class RoundRobinPolicy(Policy):
    """Round-robin: take the live workers' pushes in the cyclic order 0, 1, ..., W-1, 0, ...;
    apply and answer each at once."""

    name = "round_robin"

    def next_worker(self, server):
        turn = getattr(server, "turn", 0)
        w = min(server.live, key=lambda v: ((v - turn) % server.workers, v))
        server.turn = w + 1
        return w


POLICIES = {"bsp": BSPPolicy, "asp": ASPPolicy, "ssp": SSPPolicy, "backup": BackupPolicy,
            "round_robin": RoundRobinPolicy}


def check_shards(policy: Policy, shards: int) -> None:
    """A policy that takes pushes in arrival order runs on one shard: with several, each shard
    would see its own order, decide its own answers, and the shards could wait on each other
    (shard 0 for a worker that waits for shard 1, and the reverse)."""
    if shards > 1 and type(policy).next_worker is Policy.next_worker:
        raise ValueError(f"policy {policy!r} takes pushes in arrival order and runs on a single server shard; "
                         f"got shards={shards}. Use arch='ps' (one shard), or bsp / round_robin with shards")


def get_policy(policy) -> Policy:
    if isinstance(policy, Policy):
        return policy
    if policy not in POLICIES:
        raise ValueError(f"unknown parameter-server policy {policy!r}; valid: {', '.join(POLICIES)} "
                         "(or a Policy instance)")
    return POLICIES[policy]()
