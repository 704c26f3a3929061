"""A student's function called by a check, with none of the student's code running in the grader.

There a student's function could walk ``sys._getframe()`` up to the check and read the expected
value, or monkeypatch the check. :class:`Sandbox` runs it in persistent child processes (``forkserver``,
torch preloaded); the check calls ``box.function(*args)`` as it would the function, many times and
from several rank threads at once (a call takes an idle child, or starts one). Plain data (None,
bool, int, float, str, tensors; lists, tuples, dicts of them; numpy values become numbers and
tensors) and generators go by value (a generator's state comes back, as if drawn here); anything
else (a Comm, a callable, a Work) as a *handle*: in the child a :class:`Remote`, whose public
attributes are read and called on the real object by the check's calling thread while the child
waits (so hand nothing whose public attributes hold the answer); a tensor the child passes to such
a call gets its in-place changes back (``comm.all_reduce(x)``). What a child sends is untrusted: it
is ``torch.save`` d and read here by ``torch.load(weights_only=True)``, which builds plain data only.

``limit`` is a deadline from ``__init__``: past it the children are killed and calls raise
:class:`SandboxTimeout` (time in a handle's method, in the grader, is not cut short). ``close``
kills the children, all they started and, this process being made a child subreaper (Linux), every
orphan reparented to it since ``__init__``: meant for a process dedicated to scoring (the grader
starts one per notebook). A child imports the grader's main module as multiprocessing does (a
notebook kernel has none): keep answers out of it.
"""
from __future__ import annotations

import builtins
import contextlib
import io
import itertools
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import pickle
import shutil
import sys
import tempfile
import threading
import time
import types
import weakref

import psutil
import torch

from .reaper import become_subreaper

_CONTEXT = multiprocessing.get_context("forkserver")
_SCALARS = (bool, int, float, complex, str)
_NOT_HANDED = (types.ModuleType, types.FrameType, types.TracebackType, types.CodeType,
               types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_IDS = itertools.count()
_CHILD = {"conn": None, "sent": [], "lock": threading.Lock()}  # in a child: its pipe, the tensors it sent


class SandboxTimeout(Exception):
    """The sandbox's deadline passed; its children were killed."""


class StudentError(Exception):
    """The student's code raised ("TypeName: message"), or its process exited or misbehaved."""


class _Handle(int):
    """Grader -> child: the id of an object that stays in the grader."""


class _Method:
    """Grader -> child: the attribute read is callable."""


def _base(v):
    return next(base for base in _SCALARS if isinstance(v, base))(v)  # an IntEnum, a numpy.float64


def _encode(v, other, tensors: list):
    """``v`` as plain data: numpy values as Python numbers and tensors, a tensor as a detached clone
    (the tensor itself also into ``tensors``), lists, tuples and dicts by item; the rest as ``other(v)``."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, (np.generic, np.ndarray)) and v.dtype != object:
        v = v.item() if isinstance(v, np.generic) else torch.from_numpy(v.copy())
    if v is None or isinstance(v, _SCALARS):
        return v if v is None else _base(v)
    if isinstance(v, torch.Tensor):
        tensors.append(v)
        return v.detach().clone()
    if isinstance(v, (list, tuple)):
        return (list if isinstance(v, list) else tuple)(_encode(x, other, tensors) for x in v)
    if isinstance(v, dict) and all(k is None or type(k) in _SCALARS for k in v):
        return {k: _encode(x, other, tensors) for k, x in v.items()}
    return other(v)


def _handle(v, table: dict, gens: list):
    """In the grader: what is not plain data, as the child gets it: a generator by value (also into
    ``gens``), anything else as the id of a handle into ``table``."""
    if isinstance(v, torch.Generator):
        gens.append(v)
        return v
    if isinstance(v, _NOT_HANDED):
        raise TypeError(f"a {type(v).__name__} is not handed to a student's function")
    table[hid := next(_IDS)] = v
    return _Handle(hid)


def _refuse(v):
    """In a child: what is not plain data: a Remote as its id, anything else refused."""
    if isinstance(v, Remote):
        return {"__handle__": v._hid}
    raise TypeError(f"a value that is not plain data: {type(v).__name__}")


def _resolve(v, table: dict, tensors: list, bad: list):
    """In the grader: a child's message with its handles resolved (unknown ids into ``bad``)."""
    if isinstance(v, dict) and list(v) == ["__handle__"]:
        known = isinstance(hid := v["__handle__"], int) and hid in table
        bad += [] if known else [hid]
        return table[hid] if known else None
    if isinstance(v, dict):
        return {k: _resolve(x, table, tensors, bad) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_resolve(x, table, tensors, bad) for x in v)
    tensors += [v] if isinstance(v, torch.Tensor) else []
    return v


def _serve(request, table: dict, mirror: list) -> tuple:
    """In the grader: a child's ("get", id, name) or ("call", id, name or None, args, kwargs) done on
    the real object: ("value" or "error", ..., the tensors sent in this call changed in place since)."""
    tensors, bad = [], []
    request = _resolve(request, table, tensors, bad)
    mirror += [[weakref.ref(t), t._version] for t in tensors]
    try:
        kind, hid, name, *rest = request
        if bad or hid not in table:
            raise LookupError("not an object handed to this call")
        if name is not None and (not isinstance(name, str) or name.startswith("_")):
            raise AttributeError(f"{name!r} of a {type(table[hid]).__name__} is not readable")
        target = table[hid] if name is None else getattr(table[hid], name)
        if kind == "get" and callable(target):
            answer = ("value", _Method)
        else:
            value = target if kind == "get" else target(*rest[0], **rest[1])
            answer = ("value", _encode(value, lambda v: _handle(v, table, []), []))
    except Exception as error:
        answer = ("error", (type(error).__name__, str(error)))
    updates = []
    for i, entry in enumerate(mirror):
        if (t := entry[0]()) is not None and t._version != entry[1]:
            updates.append((i, t.detach().clone()))
            entry[1] = t._version
    return answer + (updates,)


def _unwrap(v, gens: list):
    """In a child: a value from the grader, its handles as Remote (its generators into ``gens``)."""
    if type(v) is dict:
        return {k: _unwrap(x, gens) for k, x in v.items()}
    if type(v) in (list, tuple):
        return type(v)(_unwrap(x, gens) for x in v)
    gens += [v] if isinstance(v, torch.Generator) else []
    return Remote(int(v)) if type(v) is _Handle else v


def _dump(message) -> bytes:
    buffer = io.BytesIO()
    torch.save(message, buffer)
    return buffer.getvalue()


def _ask(request):
    """In a child: ask the grader; the answer's value, or its exception raised here."""
    with _CHILD["lock"]:
        sent = []
        try:
            data = _dump(_encode(request, _refuse, sent))
        except TypeError as error:
            raise TypeError(f"passed {error} to an object of the grader") from None
        _CHILD["conn"].send_bytes(data)
        _CHILD["sent"] += [weakref.ref(t) for t in sent]
        kind, value, updates = pickle.loads(_CHILD["conn"].recv_bytes())
        for i, new in updates:
            if (t := _CHILD["sent"][i]()) is not None:
                with torch.no_grad():
                    t.copy_(new)
    if kind == "error":
        cls = getattr(builtins, value[0], None)
        try:
            error = cls(value[1]) if isinstance(cls, type) and issubclass(cls, Exception) else None
        except Exception:  # a builtin exception with other arguments
            error = None
        raise error or RuntimeError(f"{value[0]}: {value[1]}")
    return _unwrap(value, [])


class Remote:
    """In a child: an object of the grader. A public attribute reads as its value (plain data by
    value, else another Remote) or, if callable, as a function that calls it in the grader."""
    __slots__ = ("_hid", "_methods")

    def __init__(self, hid: int):
        self._hid, self._methods = hid, set()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(f"{name!r} of an object of the grader is not readable")
        if name not in self._methods:
            if (value := _ask(("get", self._hid, name))) is not _Method:
                return value
            self._methods.add(name)  # the next call of it is one round trip
        return lambda *args, **kwargs: _ask(("call", self._hid, name, args, kwargs))

    def __call__(self, *args, **kwargs):
        return _ask(("call", self._hid, None, args, kwargs))


def _child(conn, source: str, name: str, work: str | None, hidden: list | None) -> None:
    """A child: isolated in ``work`` with ``hidden`` covered (unless ``work`` is None), exec
    ``source`` once in a fresh namespace, then answer ("call", args, kwargs)."""
    torch.set_num_threads(1)
    if work is not None:
        from .isolation import isolate

        os.chdir(work)
        isolate(work, hidden or [])
    _CHILD["conn"], namespace, failure = conn, {"__name__": "__main__", "__builtins__": builtins}, None
    try:
        exec(compile(source, "<answer>", "exec"), namespace)
        if name not in namespace:
            raise NameError(f"name {name!r} is not defined")
    except BaseException as error:  # raised again by every call
        failure = error
    while True:
        try:
            _, args, kwargs = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        _CHILD["sent"], gens = [], []
        try:
            if failure is not None:
                raise failure
            result = namespace[name](*_unwrap(args, gens), **_unwrap(kwargs, gens))
            try:
                reply = ("return", _encode(result, _refuse, []), [g.get_state() for g in gens])
            except TypeError as error:
                reply = ("raise", "TypeError", f"returned {error}")
        except BaseException as error:  # a message that cannot be shown ends the child
            reply = ("raise", type(error).__name__, str(error))
        conn.send_bytes(_dump(reply))


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
        message = pickle.dumps(("call", *_encode((args, kwargs), lambda v: _handle(v, table, gens), [])))
        worker, healthy = self._take(), False
        try:
            reply = self._exchange(worker, message)
            while reply[0] in ("get", "call"):
                reply = self._exchange(worker, pickle.dumps(_serve(reply, table, mirror)))
            if reply[0] == "raise" and len(reply) == 3:
                healthy = True
                if reply[1] == "AssertionError":  # a check's "wrong answer", with its message
                    raise AssertionError(reply[2])
                raise StudentError(f"{reply[1]}: {reply[2]}")
            with contextlib.suppress(TypeError, ValueError, RuntimeError):
                bad, (kind, value, states) = [], reply
                value = _resolve(value, table, [], bad)
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
        process = _CONTEXT.Process(target=_child, args=(there, self.source, self.name, self._work, self.hidden),
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
