"""Decentralized training: every worker keeps its own model and averages with its neighbours
only, over a gossip topology; no server, no global all-reduce.

* :mod:`.topology`: the graphs (ring, torus, hypercube, exponential, complete, star, random
  regular), their Metropolis-Hastings mixing matrices and spectral gaps;
* :mod:`.gossip`: one gossip step over Comm and its closed-form cost;
* :mod:`.architecture`: ``arch="gossip(topology=...)"`` and each rank's exchange;
* the rules, ``sync=...``: :mod:`.dpsgd` (``dpsgd``), :mod:`.dcd` (``dcd_psgd``), :mod:`.ecd`
  (``ecd_psgd``), :mod:`.choco` (``choco(gamma=...)``, with :mod:`.contraction`), :mod:`.naive`
  (``naive_gossip``, compressing the models themselves) and :mod:`.adpsgd` (``adpsgd``,
  asynchronous, its pairings ordered by :mod:`.pairing`).

They sit above :mod:`commlab.sync` (they are synchronizers, on its base class) and register
themselves in its registry and in the architectures' (``commlab.sync.get("dpsgd")``,
``commlab.arch.get("gossip")``), so the Trainer composes them as it does the others::

    Trainer(sync="choco(gamma=0.4)", arch="gossip(topology='ring')", compress="topk(0.1)", workers=8)
"""
from __future__ import annotations

from ..arch import ARCHITECTURES
from ..sync import register_sync
from .adpsgd import ADPSGD
from .architecture import Gossip, GossipExchange
from .choco import CHOCO
from .dcd import DCDPSGD
from .dpsgd import DPSGD
from .ecd import ECDPSGD
from .naive_gossip import NaiveGossip

RULES = (DPSGD, DCDPSGD, ECDPSGD, CHOCO, NaiveGossip, ADPSGD)
for _cls in RULES:
    register_sync(_cls)
ARCHITECTURES.register(Gossip.name, Gossip)

__all__ = ["ADPSGD", "CHOCO", "DCDPSGD", "DPSGD", "ECDPSGD", "Gossip", "GossipExchange", "NaiveGossip", "RULES"]
