"""``launch(fn, world_size, runtime=...)``: start ranks, run ``fn(comm, *args)`` on each,
return the results by rank.

* ``threads``: ranks are threads of this process (functions from a notebook cell work).
* ``gloo``: one process per rank over torch.distributed with Gloo, on CPUs. On a Linux machine
  without a GPU the processes are forked (fast; a function from a notebook cell works). On a
  machine with a GPU they never are: autograd starts a thread per device at the first backward
  pass, and a forked child of such a process cannot run autograd. There, and off Linux, they
  start from a fork server (``forkserver``, which has imported commlab once) or are spawned,
  and ``fn`` must be importable from a module (:func:`resolve_start_method` says which, and why).
* ``nccl``: one spawned process per GPU over torch.distributed with NCCL.
* Under ``torchrun`` (RANK and WORLD_SIZE in the environment) with gloo or nccl, this
  process is one rank of the job; every process gets the full list of results.

A rank that raises makes ``launch`` raise :class:`RankError` naming it, with its traceback,
and tear the others down (threads leave their waits, processes are killed). A rank that
waits longer than ``timeout`` seconds for a peer raises :class:`CommTimeout`.
"""
from __future__ import annotations

import os
import pickle
import queue
import socket
import sys
import time
import traceback
from datetime import timedelta

import torch

from .. import checks
from ..net.clock import as_network
from .errors import RankError
from .threads import caller_core, run_threads

RUNTIMES = ("threads", "gloo", "nccl")
START_METHODS = ("fork", "forkserver", "spawn")
START_METHOD_ENV = "COMMLAB_START_METHOD"  # the default start method, e.g. to try a GPU server's path


def _check(fn, world_size, runtime, timeout):
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r}; valid runtimes: {', '.join(RUNTIMES)}")
    if not callable(fn):
        raise TypeError(f"fn must be callable as fn(comm, *args), got {type(fn).__name__}")
    if not checks.is_int(world_size) or world_size < 1:
        raise ValueError(f"world_size must be an integer >= 1, got {world_size!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    if runtime == "nccl":
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if gpus == 0:
            raise RuntimeError("runtime 'nccl' needs CUDA GPUs and none is visible; "
                               "valid runtimes here: 'threads', 'gloo'")
        if world_size > gpus and "LOCAL_RANK" not in os.environ:
            raise ValueError(f"runtime 'nccl' runs one rank per GPU: world_size={world_size} but "
                             f"{gpus} GPU(s) are visible")


def under_torchrun() -> bool:
    """Whether torchrun started this process (RANK, WORLD_SIZE and MASTER_ADDR are set)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ


def launch(fn, world_size: int | None = None, runtime: str = "threads", net=None, timeout: float = 60.0,
           args: tuple = (), start_method: str | None = None, one_core: bool = False) -> list:
    """Run ``fn(comm, *args)`` on ``world_size`` ranks and return the results by rank.

    net: None, a link profile name, a LinkModel or a Network: gives each rank a simulated
    clock (``comm.clock``). timeout: seconds a rank may wait for a peer before the run fails.
    start_method: how Gloo and NCCL rank processes start, "fork", "forkserver" or "spawn"
    (None: :func:`resolve_start_method`'s choice; fork is refused where it is unsafe).
    one_core: threads runtime only; run every rank thread on one processor core
    (:func:`commlab.runtime.threads.caller_core`): right for ranks whose steps are Python-bound.
    """
    network = as_network(net)
    if runtime in ("gloo", "nccl") and under_torchrun():
        env_size = int(os.environ["WORLD_SIZE"])
        if world_size not in (None, env_size):
            raise ValueError(f"world_size={world_size} but torchrun started WORLD_SIZE={env_size} ranks")
        _check(fn, env_size, runtime, timeout)
        return _run_torchrun(fn, runtime, network, timeout, args)
    world_size = 1 if world_size is None else world_size
    _check(fn, world_size, runtime, timeout)
    if runtime == "threads":
        return run_threads(fn, world_size, network, timeout, args, caller_core() if one_core else None)
    return _run_processes(fn, world_size, runtime, network, timeout, args, start_method)


# ----- processes -------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _make_comm(rank, world_size, backend, network, timeout, init_method, local_rank):
    from .dist import DistComm
    import torch.distributed as dist

    device = "cpu"
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = f"cuda:{local_rank}"
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=timeout))
    return DistComm(rank, world_size, backend, network.clock(rank) if network else None, device)


def _child(rank, world_size, backend, init_method, fn, args, network, timeout, inbox, threads):
    import torch.distributed as dist

    torch.set_num_threads(threads)
    try:
        comm = _make_comm(rank, world_size, backend, network, timeout, init_method, rank)
        inbox.put(("ok", rank, pickle.dumps(fn(comm, *args))))
        dist.destroy_process_group()
    except BaseException as e:  # noqa: BLE001 - sent to the parent
        inbox.put(("err", rank, f"{type(e).__name__}: {e}", traceback.format_exc()))


def fork_is_safe() -> bool:
    """Whether a rank process may be forked from this one: on Linux, and only where autograd
    never starts device threads, i.e. no accelerator is visible (a CPU-only machine). With a GPU,
    the first backward pass starts one autograd thread per device, after which a forked child
    fails at its own first backward ("Unable to handle autograd's threading in combination with
    fork-based multiprocessing"); CUDA itself cannot be used in a forked child either."""
    if not sys.platform.startswith("linux"):
        return False
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and accelerator.is_available():
        return False
    return not torch.cuda.is_available()


def resolve_start_method(runtime: str = "gloo", requested: str | None = None) -> str:
    """How rank processes start: ``requested`` (or the environment's COMMLAB_START_METHOD) if
    given, else ``fork`` for Gloo where :func:`fork_is_safe`, else ``forkserver`` on Linux and
    ``spawn`` elsewhere. NCCL ranks are never forked (CUDA)."""
    source = "start_method"
    if requested is None and os.environ.get(START_METHOD_ENV):
        requested, source = os.environ[START_METHOD_ENV], START_METHOD_ENV
    if requested is not None:
        if requested not in START_METHODS:
            raise ValueError(f"unknown {source} {requested!r}; valid: {', '.join(START_METHODS)}")
        if requested == "fork" and (runtime != "gloo" or not fork_is_safe()):
            why = "NCCL ranks use CUDA" if runtime != "gloo" else \
                "this machine has a GPU, and a process forked once autograd has started its device threads cannot run autograd"
            raise ValueError(f"{source}='fork' is unsafe here: {why}; use 'forkserver' or 'spawn'")
        return requested
    if runtime == "gloo" and fork_is_safe():
        return "fork"
    return "forkserver" if sys.platform.startswith("linux") else "spawn"


def _start_method(runtime, fn, requested):
    method = resolve_start_method(runtime, requested)
    if method != "fork":  # spawn and forkserver pickle fn: check it here, with a clear message
        try:
            pickle.dumps(fn)
            main = sys.modules.get("__main__")
            if getattr(fn, "__module__", None) == "__main__" and not hasattr(main, "__file__"):
                raise pickle.PicklingError("it is defined in an interactive session (a notebook cell or a REPL)")
        except Exception as e:
            raise RuntimeError(
                f"{getattr(fn, '__qualname__', fn)!r} cannot be sent to spawned processes ({e}); they start by "
                f"{method!r} here, not by fork ({_why_not_fork(runtime)}). Define it in an "
                f"importable module (a .py file) and import it, or use runtime='threads'.") from e
        main = sys.modules.get("__main__")
        script = getattr(main, "__file__", None)
        if getattr(main, "__spec__", None) is None and script is not None and not os.path.isfile(script):
            raise RuntimeError(  # a fresh rank re-imports the main script, which must be a file
                f"this program's main script {script!r} is not a file (a script read from standard input?); "
                f"rank processes start by {method!r} here ({_why_not_fork(runtime)}) and import it again. "
                "Save it as a .py file, or use runtime='threads'.")
    return method


def _why_not_fork(runtime) -> str:
    if runtime != "gloo":
        return "NCCL ranks use CUDA"
    if fork_is_safe():
        return "as requested"
    if not sys.platform.startswith("linux"):
        return f"{sys.platform} does not fork safely"
    return "this machine has a GPU, and autograd's device threads cannot be forked"


def _blame(first, inbox, procs, done, grace: float = 0.25) -> RankError:
    """The error to raise once a rank reported ``first``. That report is often a symptom: a
    rank whose peer process died without a word (os._exit, a signal, the OOM killer) sees its
    connection drop. So look a moment longer; a process that exited with neither a result nor
    an error is to blame, else the first error that arrived."""
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
            return RankError(silent[0], f"process exited with code {procs[silent[0]].exitcode} without a result")
        if len(exited) == len(procs) or time.monotonic() > deadline:
            return RankError(first[1], first[2], first[3])
        time.sleep(0.01)


def _run_processes(fn, world_size, runtime, network, timeout, args, start_method):
    import torch.multiprocessing as mp

    method = _start_method(runtime, fn, start_method)
    ctx = mp.get_context(method)
    if method == "forkserver":  # the server imports commlab (and torch) once; each rank forks from it
        ctx.set_forkserver_preload(["commlab"])
    inbox = ctx.Queue()
    init_method = f"tcp://127.0.0.1:{_free_port()}"
    # a forked child keeps one thread (OpenMP's pool does not survive a fork); a fresh process
    # shares the cores, and never takes more threads than this process uses (the same sums)
    threads = 1 if method == "fork" else max(1, min(torch.get_num_threads(), (os.cpu_count() or 1) // world_size))
    procs = [ctx.Process(target=_child, name=f"commlab-rank{r}", daemon=True,
                         args=(r, world_size, runtime, init_method, fn, args, network, timeout, inbox, threads))
             for r in range(world_size)]
    for p in procs:
        p.start()
    results, done = [None] * world_size, set()
    try:
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
            if msg[0] == "err":
                raise _blame(msg, inbox, procs, done)
            results[msg[1]] = pickle.loads(msg[2])
            done.add(msg[1])
    finally:
        for p in procs:
            p.join(timeout=2.0 if len(done) == world_size else 0.0)
            if p.is_alive():
                p.kill()
                p.join()
        inbox.close()
    return results


# ----- torchrun --------------------------------------------------------------------------
def _run_torchrun(fn, runtime, network, timeout, args):
    import torch.distributed as dist

    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    comm = _make_comm(rank, world_size, runtime, network, timeout, "env://", local_rank)
    result = fn(comm, *args)
    results = [None] * world_size
    dist.all_gather_object(results, result)
    dist.destroy_process_group()
    return results
