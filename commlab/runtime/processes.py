"""Gloo and NCCL ranks as processes of this machine: start them, meet, run, collect the results.

How a group starts, and why it survives a busy machine:

* **The meeting point is a file**, torch's FileStore in a new temporary folder (removed at the
  end), not a TCP port chosen in advance: a port that was free when asked can be taken before
  the store binds it, and no port is shared with another group on this host. Each rank's Gloo
  sockets then bind ports the kernel picks for them, atomically.
* **A barrier right after the group is made.** Making a Gloo group is not a synchronization
  point: a rank whose side of every connection is up goes on while a peer is still reading its
  half of the handshake. A rank with nothing to send (a function that returns at once) then
  tears its group down and exits, and the slower peer fails with "Gloo connectFullMesh failed
  ... Connection closed by peer" (benchmarks/stress_launch.py: 17 of 600 launches of 3 and 4
  ranks on 2 busy cores, every one of them a function that never communicates). After the
  barrier every rank has finished connecting before any rank runs the function.
* **A barrier before leaving**, so no rank closes its connections while a peer still sends to
  it or waits for it.
* **A failed start is tried again**, the whole group at once, up to :data:`START_ATTEMPTS` times,
  with a warning each time; the function has not run on any rank then. A start that timed out
  is not tried again (it would wait as long again), nor is a rank that died without a word.

A rank that raises makes the group fail with :class:`RankError` naming it; a rank that exits
without a result (``os._exit``, a signal, the OOM killer) is named too, even when a peer's
error, a symptom of the lost connection, arrives first.
"""
from __future__ import annotations

import os
import pickle
import queue
import shutil
import tempfile
import time
import traceback
import warnings
from datetime import timedelta

import torch

from .errors import RankError
from .start_method import checked_start_method

START_ATTEMPTS = 3  # a group's start, tried again after a failure other than a timeout


def connect(rank, world_size, backend, network, timeout, init_method, local_rank):
    """This process's Comm in a new process group, returned once every rank has made it."""
    import torch.distributed as dist

    from .dist import DistComm

    device = "cpu"
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = f"cuda:{local_rank}"
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=timeout))
    comm = DistComm(rank, world_size, backend, network.clock(rank) if network else None, device)
    barrier(backend, local_rank)
    return comm


def barrier(backend, local_rank):
    """A barrier of the default group, outside any Comm's counters and clock."""
    import torch.distributed as dist

    dist.barrier(device_ids=[local_rank]) if backend == "nccl" else dist.barrier()


def _child(rank, world_size, backend, init_method, fn, args, network, timeout, inbox, threads):
    import torch.distributed as dist

    torch.set_num_threads(threads)
    try:
        comm = connect(rank, world_size, backend, network, timeout, init_method, rank)
    except BaseException as e:  # noqa: BLE001 - sent to the parent, which may start the group again
        inbox.put(("start", rank, f"{type(e).__name__}: {e}", traceback.format_exc()))
        return
    stage = "err"
    try:
        result = pickle.dumps(fn(comm, *args))
        stage = "leave"  # fn returned; a failure now is most likely a peer's
        barrier(backend, rank)
        inbox.put(("ok", rank, result))
        dist.destroy_process_group()
    except BaseException as e:  # noqa: BLE001 - sent to the parent
        inbox.put((stage, rank, f"{type(e).__name__}: {e}", traceback.format_exc()))


class _StartFailed(Exception):
    def __init__(self, rank, message, traceback_text):
        super().__init__(message)
        self.rank, self.message, self.traceback_text = rank, message, traceback_text
        text = message.lower()
        self.timed_out = "timed out" in text or "timeout" in text


def run_processes(fn, world_size, runtime, network, timeout, args, start_method):
    """Run ``fn(comm, *args)`` on ``world_size`` new processes; their results by rank."""
    import torch.multiprocessing as mp

    method = checked_start_method(runtime, fn, start_method)
    ctx = mp.get_context(method)
    if method == "forkserver":  # the server imports commlab (and torch) once; each rank forks from it
        ctx.set_forkserver_preload(["commlab"])
    # a forked child keeps one thread (OpenMP's pool does not survive a fork); a fresh process
    # shares the cores, and never takes more threads than this process uses (the same sums)
    threads = 1 if method == "fork" else max(1, min(torch.get_num_threads(), (os.cpu_count() or 1) // world_size))
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            return _run_group(ctx, fn, world_size, runtime, network, timeout, args, threads)
        except _StartFailed as failed:
            if attempt == START_ATTEMPTS or failed.timed_out:
                why = "it timed out" if failed.timed_out else f"it failed {attempt} times"
                raise RankError(failed.rank, f"the {runtime} process group did not start ({why}; the last "
                                f"failure: {failed.message})", failed.traceback_text) from None
            warnings.warn(f"rank {failed.rank} failed while its {runtime} process group was starting "
                          f"({failed.message.splitlines()[0]}); starting its process group again "
                          f"(attempt {attempt + 1} of {START_ATTEMPTS})", RuntimeWarning, stacklevel=3)


def _run_group(ctx, fn, world_size, runtime, network, timeout, args, threads):
    folder = tempfile.mkdtemp(prefix="commlab-rendezvous-")
    init_method = "file://" + os.path.join(folder, "store")
    inbox = ctx.Queue()
    procs = [ctx.Process(target=_child, name=f"commlab-rank{r}", daemon=True,
                         args=(r, world_size, runtime, init_method, fn, args, network, timeout, inbox, threads))
             for r in range(world_size)]
    results, done = [None] * world_size, set()
    try:
        for p in procs:
            p.start()
        while len(done) < world_size:
            try:
                msg = inbox.get(timeout=0.05)
            except queue.Empty:
                for r, p in enumerate(procs):
                    if r not in done and p.exitcode is not None and inbox.empty():
                        time.sleep(0.2)  # give its last message a moment to arrive
                        if inbox.empty():
                            raise RankError(r, f"process exited with code {p.exitcode} without a result")
                continue
            if msg[0] == "ok":
                results[msg[1]] = pickle.loads(msg[2])
                done.add(msg[1])
                continue
            heard = {msg[1]}
            if msg[0] == "leave":  # a peer's own error explains it better, if one comes
                msg = _cause(msg, inbox, procs, min(timeout, 5.0), done, heard)
            rank, message, tb = _blame(msg, inbox, procs, done | heard)
            if msg[0] == "start" and rank == msg[1]:
                raise _StartFailed(rank, message, tb)
            if msg[0] == "leave" and rank == msg[1]:
                late = [r for r in range(world_size) if r not in done and r != rank]
                message = (f"rank {rank} returned its result, then waited for rank(s) {', '.join(map(str, late))}, "
                           f"which did not finish: {message}")
            raise RankError(rank, message, tb)
    finally:
        for p in procs:
            if p.pid is not None:
                p.join(timeout=2.0 if len(done) == world_size else 0.0)
                if p.is_alive():
                    p.kill()
                    p.join()
        inbox.close()
        shutil.rmtree(folder, ignore_errors=True)
    return results


def _cause(leaving, inbox, procs, grace, done, heard):
    """A rank failed while waiting for its peers to finish (``leaving``): the first error a peer
    reports within ``grace`` seconds, which is what kept it waiting, or ``leaving`` itself once
    every rank has been heard from or one has exited without a word. ``done`` and ``heard``
    gain the ranks whose messages are read here."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            msg = inbox.get(timeout=0.05)
        except queue.Empty:
            if any(p.exitcode is not None and r not in done | heard for r, p in enumerate(procs)):
                break  # a process died without a word: _blame names it
            continue
        heard.add(msg[1])
        if msg[0] in ("err", "start"):
            return msg
        if msg[0] == "ok":
            done.add(msg[1])
        if len(done | heard) == len(procs):
            break
    return leaving


def _blame(first, inbox, procs, done, grace: float = 0.25):
    """Who is to blame once a rank reported ``first``: (rank, message, traceback). That report is
    often a symptom: a rank whose peer process died without a word (os._exit, a signal, the OOM
    killer) sees its connection drop. So look a moment longer; a process that exited with neither
    a result nor an error is to blame, else the first error that arrived."""
    reported = set(done) | {first[1]}
    deadline = time.monotonic() + grace
    while True:
        exited = {r for r, p in enumerate(procs) if p.exitcode is not None}
        try:  # what those processes sent before they exited is in the queue by now
            while True:
                reported.add(inbox.get(timeout=0.01)[1])
        except queue.Empty:
            pass
        silent = sorted(exited - reported)
        if silent:
            return silent[0], f"process exited with code {procs[silent[0]].exitcode} without a result", ""
        if len(exited) == len(procs) or time.monotonic() > deadline:
            return first[1], first[2], first[3]
        time.sleep(0.01)
