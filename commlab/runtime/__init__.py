"""Where ranks live: the Comm interface, its runtimes, and launch()."""
from .comm import Comm, CommStats, Work, nbytes
from .errors import Aborted, CommTimeout, RankError
from .launch import RUNTIMES, launch, under_torchrun

__all__ = ["Comm", "CommStats", "Work", "nbytes", "Aborted", "CommTimeout", "RankError", "RUNTIMES",
           "launch", "under_torchrun"]
