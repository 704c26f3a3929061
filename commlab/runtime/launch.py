"""``launch(fn, world_size, runtime=...)``: start ranks, run ``fn(comm, *args)`` on each,
return the results by rank.

* ``threads``: ranks are threads of this process (functions from a notebook cell work).
* ``gloo``: one process per rank over torch.distributed with Gloo, on CPUs. On a Linux machine
  without a GPU the processes are forked (fast; a function from a notebook cell works); on a
  machine with a GPU they start from a fork server or are spawned, and ``fn`` must be importable
  from a module (:mod:`.start_method` says which, and why). How a group starts and survives a
  busy machine: :mod:`.processes`.
* ``nccl``: one spawned process per GPU over torch.distributed with NCCL.
* Under ``torchrun`` (RANK and WORLD_SIZE in the environment) with gloo or nccl, this
  process is one rank of the job; every process gets the full list of results.

A rank that raises makes ``launch`` raise :class:`RankError` naming it, with its traceback,
and tear the others down (threads leave their waits, processes are killed). A rank that
waits longer than ``timeout`` seconds for a peer raises :class:`CommTimeout`.
"""
from __future__ import annotations

import os

import torch

from .. import checks
from ..net.clock import as_network
from .processes import connect, run_processes
from .thread_ranks import caller_core, run_threads

RUNTIMES = ("threads", "gloo", "nccl")


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
    (:func:`commlab.runtime.thread_ranks.caller_core`): right for ranks whose steps are Python-bound.
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
    return run_processes(fn, world_size, runtime, network, timeout, args, start_method)


# ----- torchrun --------------------------------------------------------------------------
def _run_torchrun(fn, runtime, network, timeout, args):
    import torch.distributed as dist

    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    comm = connect(rank, world_size, runtime, network, timeout, "env://", local_rank)
    result = fn(comm, *args)
    results = [None] * world_size
    dist.all_gather_object(results, result)
    dist.destroy_process_group()
    return results
