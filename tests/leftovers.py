"""For the tests that start processes: which processes still carry a test's tag in their
environment (a variable the test set, inherited by everything grading started)."""
import psutil


def tagged(variable: str, tag: str) -> list:
    """The command lines of the running processes whose environment has ``variable`` = ``tag``."""
    def ours(p):
        try:
            return p.environ().get(variable) == tag
        except (psutil.Error, OSError):
            return False
    return [p.cmdline() for p in psutil.process_iter() if ours(p)]
