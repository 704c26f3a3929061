"""Where ranks live: the Comm interface, its runtimes, and launch()."""
from .comm import Comm, Work
from .stats import CommStats, nbytes
from .errors import Aborted, CommTimeout, RankError
from .launch import RUNTIMES, START_METHODS, fork_is_safe, launch, resolve_start_method, under_torchrun

__all__ = ["Comm", "CommStats", "Work", "nbytes", "Aborted", "CommTimeout", "RankError", "RUNTIMES",
           "START_METHODS", "fork_is_safe", "launch", "resolve_start_method", "under_torchrun"]
