"""Parameter-server policies: when a server applies a push and when it answers a pull.

The server loop of :mod:`commlab.arch.ps` is the same for every synchronization rule; a
policy answers its three questions. Under BSP (Valiant 1990; the PS form of Li et al. 2014)
server s, at step t::

    take the pushes g_w,t of all W workers (in the staggered order of commlab.net.cost.ps_sharded)
    x <- SGD(x, (1/W) sum_w g_w,t)
    answer every pull with x

An asynchronous policy names no worker in ``next_worker``, so the server takes whichever push
arrives first (``comm.recv_any``) and decides from the per-worker clocks: ASP applies and
answers every push at once (Dean et al. 2012); SSP answers worker w only while
clock_w - min_v clock_v <= s (Ho et al. 2013); round-robin takes the workers in turn.
"""
from __future__ import annotations


class Policy:
    """When a server applies pushes and answers pulls. A server asks, around every message:

    * ``next_worker(server)``: whose message to take next; None takes whichever comes first.
    * ``should_apply(server)``: apply the pushes buffered so far (their average) now?
    * ``can_answer(server, worker)``: answer the pull of ``worker``, whose push is applied?

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


POLICIES = {"bsp": BSPPolicy}


def get_policy(policy) -> Policy:
    if isinstance(policy, Policy):
        return policy
    if policy not in POLICIES:
        raise ValueError(f"unknown parameter-server policy {policy!r}; valid: {', '.join(POLICIES)} "
                         "(or a Policy instance)")
    return POLICIES[policy]()
