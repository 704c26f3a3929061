"""Synchronization over a parameter server: ASP, SSP, backup workers, round-robin.

Each is BSP's worker loop (push the gradient, pull the parameters) with another server
policy (:mod:`commlab.sync.server_policies`), so the worker code is the same and the server decides:

* ``asp``: x <- x - eta g_w for every push as it arrives (Dean et al., NeurIPS 2012; Recht et
  al.'s lock-free variant is :mod:`commlab.sync.hogwild`).
* ``ssp(staleness=s)``: the same updates, but worker w may start step c_w + 1 only while
  c_w - min_v c_v <= s (Ho et al., "More effective distributed ML via a stale synchronous
  parallel parameter server", NeurIPS 2013). s = 0 keeps the workers in lockstep.
* ``backup(backups=b)``: x_{t+1} = x_t - eta (1/(W-b)) sum of the first W - b gradients
  computed on x_t; the b late ones are dropped when they arrive (Chen et al., "Revisiting
  distributed synchronous SGD", 2016).
* ``round_robin``: pushes applied one by one in the fixed order 0, 1, ..., W-1, 0, ...
  (Chen, Wang and Li, INFOCOM 2019), which spreads the pushes out instead of letting them
  hit the server in a burst.

Each gradient is applied with the full learning rate (not divided by W): one pass of W
asynchronous pushes moves x as far as W BSP steps would. The History records the staleness
of every applied gradient, the gradients dropped, the server's log (``applied``) and every
worker's own clock (``worker_time``). Every worker runs the same number of steps, so with a
persistent straggler the fast workers finish first and the straggler's last steps run alone
(under backup workers those are then applied, W - b no longer being reachable); ``sim_time``,
the last worker's clock, includes that tail, ``worker_time`` shows each worker's progress.
"""
from __future__ import annotations

from .bsp import BSP
from .server_policies import ASPPolicy, BackupPolicy, RoundRobinPolicy, SSPPolicy


class _OverServer(BSP):
    needs = frozenset({"server"})  # a parameter server runs the rule's policy
    default_arch = "ps"
    schedulable = False  # the server's policy, not BSP's, decides what a push does: no scheduled messages
    policy_class = None

    def server_policy(self):
        return self.policy_class()


class ASP(_OverServer):
    """``asp``: apply every push as it arrives, x <- x - eta g_w, and answer at once (Dean et al. 2012)."""
    name, policy_class = "asp", ASPPolicy


class RoundRobin(_OverServer):
    """``round_robin``: apply pushes one at a time in the cyclic order 0..W-1 (Chen, Wang and Li 2019)."""
    name, policy_class = "round_robin", RoundRobinPolicy


class SSP(_OverServer):
    """``ssp(staleness=2)``: ASP's updates; no worker runs over s steps ahead of the slowest (Ho et al. 2013)."""
    name = "ssp"

    def __init__(self, staleness: int = 2):
        self.staleness = SSPPolicy(staleness).staleness  # validates

    def server_policy(self):
        """An :class:`~commlab.sync.server_policies.SSPPolicy` with this staleness bound."""
        return SSPPolicy(self.staleness)

    def __repr__(self) -> str:
        return f"SSP(staleness={self.staleness})"


class Backup(_OverServer):
    """``backup(backups=1)``: average the first W - b pushes of each step, drop the late ones (Chen et al. 2016)."""
    name = "backup"

    def __init__(self, backups: int = 1):
        self.backups = BackupPolicy(backups).backups

    def check(self, config) -> None:
        """ValueError unless backups < workers (some gradient must be left to average)."""
        if self.backups >= config.workers:
            raise ValueError(f"backup(backups={self.backups}) leaves no gradient to average with "
                             f"{config.workers} workers; use 0 <= backups < {config.workers}")

    def server_policy(self):
        """A :class:`~commlab.sync.server_policies.BackupPolicy` with this many backups."""
        return BackupPolicy(self.backups)

    def __repr__(self) -> str:
        return f"Backup(backups={self.backups})"
