"""Parameter-server policies: when a server applies a push and when it answers a pull.

The server loop of :mod:`commlab.arch.ps` is the same for every synchronization rule; a
policy answers its three questions. Under BSP (Valiant 1990; the PS form of Li et al. 2014)
server s, at step t::

    take the pushes g_w,t of all W workers (in the staggered order of commlab.arch.ps_layout.ps_sharded)
    x <- SGD(x, (1/W) sum_w g_w,t)
    answer every pull with x

An asynchronous policy names no worker in ``next_worker``, so the server takes whichever push
arrives first (``comm.recv_first``: first in simulated time on the threads runtime) and
decides from the per-worker clocks c_w (pushes taken from w). The asynchronous policies (ASP,
SSP, backup workers, round-robin) are synchronization rules and live beside their
synchronizers in :mod:`commlab.sync.server_policies`; this module keeps the protocol and BSP.

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
        """The worker whose push to take next, or None for whichever arrives first."""
        return None

    def should_apply(self, server) -> bool:
        """Whether to apply the buffered pushes now (default: at once)."""
        return True

    def can_answer(self, server, worker: int) -> bool:
        """Whether the pull of ``worker`` can be answered now (default: at once)."""
        return True

    def should_drop(self, server, worker: int) -> bool:
        """Whether to drop the push just taken from ``worker`` unapplied (default: never)."""
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class BSPPolicy(Policy):
    """Bulk synchronous: take step t's pushes in the staggered order, apply their average once
    all live workers have pushed, then answer every pull."""

    name = "bsp"
    synchronous = True

    def next_worker(self, server):
        """The live worker furthest behind, ties broken in the staggered order from this shard."""
        behind = min(server.clocks[w] for w in server.live)
        return min((w for w in server.live if server.clocks[w] == behind),
                   key=lambda w: ((server.shard - w) % server.shards, w))

    def should_apply(self, server) -> bool:
        """True once every live worker's push for this step is buffered."""
        return server.live <= server.buffered.keys()


def check_shards(policy: Policy, shards: int) -> None:
    """A policy that takes pushes in arrival order runs on one shard: with several, each shard
    would see its own order, decide its own answers, and the shards could wait on each other
    (shard 0 for a worker that waits for shard 1, and the reverse)."""
    if shards > 1 and type(policy).next_worker is Policy.next_worker:
        raise ValueError(f"policy {policy!r} takes pushes in arrival order and runs on a single server shard; "
                         f"got shards={shards}. Use arch='ps' (one shard), or bsp / round_robin with shards")


def get_policy(policy) -> Policy:
    """A Policy instance as it is, or "bsp"; the asynchronous ones come from their
    synchronizers (:mod:`commlab.sync.server_policies`)."""
    if isinstance(policy, Policy):
        return policy
    if policy != "bsp":
        raise ValueError(f"unknown parameter-server policy {policy!r}; valid: 'bsp' or a Policy instance "
                         "(ASP, SSP, backup and round-robin: commlab.sync.server_policies)")
    return BSPPolicy()
