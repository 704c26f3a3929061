"""Parameter-server policies of the asynchronous synchronizers: when a server applies a push
and when it answers a pull (the protocol, and BSP, are :mod:`commlab.arch.ps_policy`).

A policy that names no worker in ``next_worker`` makes the server take whichever push
arrives first (``comm.recv_first``: first in simulated time on the threads runtime); it
decides from the per-worker clocks c_w (pushes taken from w):

* ASP (Dean et al. 2012): apply every push at once, x <- x - eta g_w, answer at once.
* SSP(s) (Ho et al. 2013): apply at once; answer w only while c_w - min_v c_v <= s, so no
  worker starts a step more than s steps ahead of the slowest.
* Backup workers(b) (Chen et al. 2016): step t averages the first W - b pushes computed on
  x_t; a push computed on an older x is dropped and answered with the newest x.
* Round-robin (Chen, Wang and Li, INFOCOM 2019): apply each push at once, taking the
  workers in a fixed cyclic order, so pushes never arrive at the server in a burst.

The staleness of an applied gradient is the number of updates the server made between the
worker's pull and the gradient's application.
"""
from __future__ import annotations

from .. import checks
from ..arch.ps_policy import Policy


class ASPPolicy(Policy):
    """Asynchronous parallel: apply every push as it comes, answer at once."""

    name = "asp"


class SSPPolicy(Policy):
    """Stale synchronous parallel: apply at once; answer worker w only while
    c_w - min over live workers of c_v <= staleness."""

    name = "ssp"

    def __init__(self, staleness: int = 2):
        checks.integer("staleness", staleness, 0, got=True)
        self.staleness = staleness

    def can_answer(self, server, worker: int) -> bool:
        """Answer w only while c_w - min_v c_v <= staleness."""
        return server.clocks[worker] - min(server.clocks[v] for v in server.live) <= self.staleness

    def __repr__(self) -> str:
        return f"SSPPolicy(staleness={self.staleness})"


class BackupPolicy(Policy):
    """Backup workers: apply the average of the first W - b pushes computed on the current
    parameters (of all live workers when fewer are left); drop pushes computed on older ones."""

    name = "backup"

    def __init__(self, backups: int = 1):
        checks.integer("backups", backups, 0, got=True)
        self.backups = backups

    def should_drop(self, server, worker: int) -> bool:
        """Drop a push computed on parameters older than the server's newest."""
        return server.version[worker] < server.updates

    def should_apply(self, server) -> bool:
        """Apply once W - b pushes (or every live worker's) are buffered."""
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
        """The next live worker in the cyclic order after the last one taken."""
        turn = getattr(server, "turn", 0)
        w = min(server.live, key=lambda v: ((v - turn) % server.workers, v))
        server.turn = w + 1
        return w
