"""Nothing a submission starts outlives its grading.

A process that runs a student's code (the notebook's kernel, a function's sandbox) may start
others, and a daemon double-forks out of its parent's tree to be adopted by init. The process
that grades one submission therefore makes itself a *child subreaper* (Linux's
``PR_SET_CHILD_SUBREAPER``): orphans of its descendants are adopted by it instead of init, so
:func:`end_descendants` finds them all among its own descendants and ends them. Meant for a
process dedicated to one submission (the grader starts one per notebook); elsewhere (macOS) the
subreaper is not available and only the processes still in the tree are ended.
"""
from __future__ import annotations

import ctypes
import sys

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process adopt its descendants' orphans; True where the system allows it."""
    if not sys.platform.startswith("linux"):
        return False
    return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def end_descendants(keep=(), wait: float = 5.0) -> int:
    """Kill every descendant of this process except the pids in ``keep`` (and their
    descendants), and reap them; the number ended."""
    import psutil

    me = psutil.Process()
    kept = set(keep)
    for pid in list(kept):
        try:
            kept |= {c.pid for c in psutil.Process(pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            pass
    doomed = [p for p in me.children(recursive=True) if p.pid not in kept]
    for p in doomed:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(doomed, timeout=wait)
    return len(doomed)


def end_tree(proc) -> None:
    """Kill a started process (a ``subprocess.Popen``) and every process it started, and reap it."""
    import psutil

    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    proc.kill()
    for child in family:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait()
