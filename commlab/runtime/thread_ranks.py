"""Rank threads: start one per rank, each on a chosen core if asked, wait for them, and return
only once every operating-system thread they started has ended.

:mod:`commlab.runtime.threads` is the transport the ranks talk through (mailboxes and a
rendezvous); this module is what :func:`commlab.launch` runs for ``runtime="threads"``.
"""
from __future__ import annotations

import os
import threading
import time
import traceback

from .errors import Aborted, CommTimeout, RankError
from .threads import ThreadComm, World


def caller_core() -> set[int] | None:
    """The processor core the calling thread runs on, as an affinity set for
    ``os.sched_setaffinity``; None off Linux, where threads cannot be placed.

    Why one core: ranks of a small model spend their step in Python, one at a time under the
    interpreter lock, which every torch call releases and takes again. With the ranks on two
    or more cores the lock passes between cores each time, a wake-up in the kernel each; on one
    core it passes at no cost. Measured on 2 cores (8 ranks of the digits MLP, 120 steps): 16.3
    s on both cores, 9.5 s on one. Ranks whose operators run long (they compute without the
    lock) lose their parallelism on one core: 4 ranks of a 4 x 512 MLP at batch 256 take 1.3 s
    on both, 2.1 s on one (:data:`commlab.train.PYTHON_BOUND_FLOPS` is where the Trainer turns)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    try:  # field 39 of the thread's stat: the core it last ran on
        with open("/proc/thread-self/stat") as f:
            core = int(f.read().rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        core = min(allowed)
    return {core if core in allowed else min(allowed)}


def _os_threads() -> set[str]:
    """The ids of this process's operating-system threads (Linux; empty elsewhere)."""
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return set()


def _wait_for_exits(before: set[str], deadline: float) -> None:
    """Wait (until ``deadline``) for the OS threads started since ``before`` to end. A Python
    thread counts as joined before its OS thread has run its exit handlers, and OpenMP's workers
    for a rank thread's team end after it; one of them may hold MKL's allocator lock then. A
    process forked at that moment inherits the lock held and its first matrix product spins
    forever (measured: rank 0 of a Gloo run forked right after a threads run hung 2 times in 30;
    these threads outlived the join in 137 runs of 200, by up to 4.4 ms)."""
    while before and _os_threads() - before and time.monotonic() < deadline:
        time.sleep(0.001)


def run_threads(fn, world_size, network, timeout, args, core=None):
    """``fn(comm, *args)`` on ``world_size`` rank threads (on the processor cores in ``core`` if
    given), the results by rank (:func:`commlab.launch` with the threads runtime); this thread
    sleeps until all have returned or one has failed, which raises :class:`RankError` naming it,
    and returns only once the threads they started have ended (so a fork after it is safe)."""
    world = World(world_size, timeout)
    before = _os_threads()
    results, errors = [None] * world_size, {}
    left, ended = [world_size], threading.Event()

    def body(rank):
        if core is not None:
            os.sched_setaffinity(0, core)  # this thread only
        comm = ThreadComm(world, rank, network.clock(rank) if network else None)
        try:
            results[rank] = fn(comm, *args)
        except BaseException as e:  # noqa: BLE001 - reported to the caller below
            if not isinstance(e, Aborted):
                errors[rank] = (e, traceback.format_exc())
            world.abort.set()
            with world.lock:
                world.wake_all()
            ended.set()
        finally:
            with world.lock:
                left[0] -= 1
                if left[0] == 0:
                    ended.set()

    threads = [threading.Thread(target=body, args=(r,), name=f"commlab-rank{r}", daemon=True)
               for r in range(world_size)]
    for t in threads:
        t.start()
    while not ended.wait(0.5):  # in slices, so that Ctrl-C reaches this thread
        pass
    deadline = time.monotonic() + 2.0  # ranks blocked in commlab calls leave within a poll
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    _wait_for_exits(before, deadline)
    if errors:
        rank = min(errors, key=lambda r: (isinstance(errors[r][0], CommTimeout), r))
        exc, tb = errors[rank]
        raise RankError(rank, f"{type(exc).__name__}: {exc}", tb) from exc
    return results
