"""How rank processes start: forked, from a fork server, or spawned.

A forked rank is fast and runs a function from a notebook cell. But on a machine with a GPU,
the first backward pass starts one autograd thread per device, and a forked child of such a
process fails at its own first backward; CUDA cannot be used in a forked child either. So fork
is the default only for Gloo on a Linux machine without an accelerator; elsewhere ranks start
from a fork server (Linux: it imported commlab once, each rank forks from it) or are spawned,
and the function must be importable from a module.
"""
from __future__ import annotations

import os
import pickle
import sys

import torch

START_METHODS = ("fork", "forkserver", "spawn")
START_METHOD_ENV = "COMMLAB_START_METHOD"  # the default start method, e.g. to try a GPU server's path


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


def checked_start_method(runtime, fn, requested) -> str:
    """:func:`resolve_start_method`'s choice, after checking that a fresh process can receive
    ``fn`` and import this program's main script (spawn and forkserver pickle both)."""
    method = resolve_start_method(runtime, requested)
    if method == "fork":
        return method
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
