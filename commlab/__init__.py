"""commlab: a laboratory for communication-efficient distributed deep learning.

Layers, bottom up (imports only point down; pyproject.toml's import-linter contracts enforce
it): ``spec``, ``net`` (what the wire costs), ``data``, ``models``, ``history``; ``runtime``
(where ranks live, the Comm interface); ``compress`` (pure: tensors to payloads); ``arch``
(collectives, parameter servers, aggregation of payloads, each rank's exchange); ``sync`` and
``schedule``; ``decentral`` (gossip and the decentralized rules, on ``sync``); ``Trainer``, which composes them (beside it ``parallel``'s layouts and ``infra``); ``advisor`` and
the command line (``cli``) on top of those. The book's code, ``commlab.chapters``, sits on top and
is never imported by the library.
"""
from . import arch, compress, data, decentral, models, schedule, sync
from .history import History
from .net import LinkModel, Network, calibrate
from .runtime import RUNTIMES, Comm, CommTimeout, RankError, launch
from .train import Trainer
from .advisor import advise  # noqa: E402 - above the Trainer: it ranks what the Trainer runs

__version__ = "0.1.0"
__all__ = ["advise", "arch", "compress", "data", "decentral", "models", "schedule", "sync", "History", "Trainer", "LinkModel", "Network", "calibrate", "RUNTIMES", "Comm", "CommTimeout", "RankError", "launch"]
