"""A student's function called by a check, with none of the student's code running in the grader.

There a student's function could walk ``sys._getframe()`` up to the check and read the expected
value, or monkeypatch the check. :class:`Sandbox` runs it in persistent child processes (``forkserver``,
torch preloaded); the check calls ``box.function(*args)`` as it would the function, many times and
from several rank threads at once (a call takes an idle child, or starts one). What crosses
between the check and the child, plain data by value and everything else by handle (a child's
:class:`~commlab.classroom.proxies.Remote`), is :mod:`commlab.classroom.proxies`.

``limit`` is a deadline from ``__init__``: past it the children are killed and calls raise
:class:`SandboxTimeout` (time in a handle's method, in the grader, is not cut short). ``close``
kills the children, all they started and, this process being made a child subreaper (Linux), every
orphan reparented to it since ``__init__``: meant for a process dedicated to scoring (the grader
starts one per notebook). A child imports the grader's main module as multiprocessing does (a
notebook kernel has none): keep answers out of it.
"""
from __future__ import annotations

import contextlib
import io
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import pickle
import shutil
import tempfile
import threading
import time

import psutil
import torch

from .proxies import child_main, encode, hand_over, resolve, serve
from .reaper import become_subreaper

_CONTEXT = multiprocessing.get_context("forkserver")


class SandboxTimeout(Exception):
    """The sandbox's deadline passed; its children were killed."""


class StudentError(Exception):
    """The student's code raised ("TypeName: message"), or its process exited or misbehaved."""


class Sandbox:
    """``source`` (which defines ``name``) run in child processes, ``limit`` seconds in all; call it
    with :meth:`function`. With ``hidden`` (a list of paths, possibly empty), each child first
    isolates itself (:func:`~commlab.classroom.isolation.isolate`) in a throwaway folder of the
    sandbox, those paths covered. As a context manager, leaving it calls :meth:`close`."""

    def __init__(self, source: str, name: str, limit: float, hidden: list | None = None):
        self.source, self.name, self.limit, self.timed_out = source, name, limit, False
        self.hidden, self._work = hidden, None if hidden is None else tempfile.mkdtemp(prefix="commlab-sandbox-")
        self._deadline, self._closed, self._stopped = time.monotonic() + limit, False, f"stopped after {limit:g} s"
        self._lock, self._idle, self._workers = threading.Lock(), [], []
        _CONTEXT.set_forkserver_preload(["torch", __name__])  # (if it starts now) imported once, not per child
        become_subreaper()  # orphans come to us
        self._before = {p.pid for p in psutil.Process().children()}

    def function(self, *args, **kwargs):
        """The student's function called in a child: its result, or its AssertionError, a
        StudentError for any other exception, or SandboxTimeout."""
        table, gens, mirror = {}, [], []
        message = pickle.dumps(("call", *encode((args, kwargs), lambda v: hand_over(v, table, gens), [])))
        worker, healthy = self._take(), False
        try:
            reply = self._exchange(worker, message)
            while reply[0] in ("get", "call"):
                reply = self._exchange(worker, pickle.dumps(serve(reply, table, mirror)))
            if reply[0] == "raise" and len(reply) == 3:
                healthy = True
                if reply[1] == "AssertionError":  # a check's "wrong answer", with its message
                    raise AssertionError(reply[2])
                raise StudentError(f"{reply[1]}: {reply[2]}")
            with contextlib.suppress(TypeError, ValueError, RuntimeError):
                bad, (kind, value, states) = [], reply
                value = resolve(value, table, [], bad)
                for g, state in zip(gens, states, strict=True):
                    g.set_state(state)
                healthy = kind == "return" and not bad
            if not healthy:
                raise StudentError("the function's process sent a message that does not fit")
            return value
        finally:
            with self._lock:
                if healthy and worker in self._workers:
                    self._idle.append(worker)
            if not healthy:
                self._kill([worker], orphans=False)

    def _take(self):
        """An idle child, or a new one."""
        with self._lock:
            self._check()
            if self._idle:
                return self._idle.pop()
        here, there = multiprocessing.Pipe()
        process = _CONTEXT.Process(target=child_main, args=(there, self.source, self.name, self._work, self.hidden),
                                   daemon=True)
        process.start()
        there.close()
        worker = (process, here, psutil.Process(process.pid))
        with self._lock:
            self._workers.append(worker)
            closed = self._closed
        if closed:  # by another thread, meanwhile
            self._kill([worker], orphans=False)
        self._check()
        return worker

    def _check(self) -> None:
        if self._closed:
            raise SandboxTimeout(self._stopped) if self.timed_out else RuntimeError("the sandbox is closed")

    def _exchange(self, worker, data: bytes) -> tuple:
        """Send ``data`` to the child; its next message, read as plain data only (waiting until the
        deadline at most: past it, the sandbox is closed)."""
        try:
            worker[1].send_bytes(data)
            left = self._deadline - time.monotonic()
            data = worker[1].recv_bytes() if left > 0 and worker[1].poll(left) else None
        except (EOFError, OSError):
            self._check()
            self._kill([worker], orphans=False)
            raise StudentError(f"the function's process exited (exit code {worker[0].exitcode})") from None
        if data is None:
            self.timed_out = True
            self.close()
            self._check()
        try:
            reply = torch.load(io.BytesIO(data), weights_only=True)
        except Exception:
            raise StudentError("the function's process sent something that is not plain data") from None
        return reply if isinstance(reply, tuple) and reply and isinstance(reply[0], str) else ("?",)

    def _kill(self, workers: list, orphans: bool) -> None:
        """Kill ``workers`` (those still ours) and their descendants, and with ``orphans`` this process's
        children that appeared since ``__init__`` (not multiprocessing's forkserver or resource tracker)."""
        with self._lock:
            workers = [w for w in workers if w in self._workers]
            self._workers = [w for w in self._workers if w not in workers]
            self._idle = [w for w in self._idle if w not in workers]
        keep = self._before | {getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None),
                               getattr(multiprocessing.resource_tracker._resource_tracker, "_pid", None)}
        roots = [w[2] for w in workers]
        for _ in range(3):  # what forked meanwhile is orphaned to this process, for the next round
            procs = []
            for root in roots + [p for p in psutil.Process().children() if orphans and p.pid not in keep]:
                with contextlib.suppress(psutil.Error):
                    procs += [root] + root.children(recursive=True)
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    p.kill()
            psutil.wait_procs(procs, timeout=5)
            roots = []
        for process, conn, _ in workers:
            conn.close()
            process.join(1)

    def close(self) -> None:
        """Kill every child process and all they started; idempotent."""
        with self._lock:
            self._closed, workers = True, list(self._workers)
        self._kill(workers, orphans=True)
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
