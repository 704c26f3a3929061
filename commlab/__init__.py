"""commlab: a laboratory for communication-efficient distributed deep learning.

Layers (see the book's preface): ``runtime`` (where ranks live, the Comm interface),
``net`` (what the wire costs), the algorithm packages ``arch``, ``sync``, ``compress``,
``schedule``, and ``Trainer`` that composes them.
"""
from . import arch, compress, data, models, perf, schedule, sync
from .history import History
from .net import LinkModel, Network, calibrate
from .runtime import RUNTIMES, Comm, CommTimeout, RankError, launch
from .train import Trainer

__version__ = "0.1.0"
__all__ = ["arch", "compress", "data", "models", "perf", "schedule", "sync", "History", "Trainer", "LinkModel", "Network", "calibrate", "RUNTIMES", "Comm", "CommTimeout", "RankError", "launch"]
