"""Errors raised by runtimes and :func:`commlab.launch`."""


class RankError(RuntimeError):
    """A rank raised an exception; carries the rank and its formatted traceback."""

    def __init__(self, rank: int, message: str, traceback_text: str = ""):
        self.rank = rank
        self.traceback_text = traceback_text
        detail = f"\n\n--- traceback of rank {rank} ---\n{traceback_text}" if traceback_text else ""
        super().__init__(f"rank {rank} failed: {message}{detail}")


class CommTimeout(TimeoutError):
    """A rank waited longer than the run's timeout for a peer or a collective."""


class Aborted(RuntimeError):
    """Raised inside a rank when another rank failed and the run is being torn down."""
