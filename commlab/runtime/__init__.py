"""Where ranks live: the Comm interface, its runtimes, and launch()."""
from .comm import Comm, Work
from .stats import CommStats, nbytes
from .errors import Aborted, CommTimeout, RankError
from .launch import RUNTIMES, launch, under_torchrun
from .start_method import START_METHODS, fork_is_safe, resolve_start_method

__all__ = ["Comm", "CommStats", "Work", "nbytes", "Aborted", "CommTimeout", "RankError", "RUNTIMES",
           "START_METHODS", "fork_is_safe", "launch", "resolve_start_method", "under_torchrun"]
