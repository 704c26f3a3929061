"""What crosses between the grader and a sandboxed child (:mod:`commlab.classroom.sandbox`).

Plain data (None, bool, int, float, str, tensors; lists, tuples, dicts of them; numpy values
become numbers and tensors) and generators go by value (a generator's state comes back, as if
drawn in the grader); anything else (a Comm, a callable, a Work) as a *handle*: in the child a
:class:`Remote`, whose public attributes are read and called on the real object by the check's
calling thread while the child waits (:func:`serve`), so hand nothing whose public attributes hold
the answer. A tensor the child passes to such a call gets its in-place changes back
(``comm.all_reduce(x)``). What a child sends is untrusted: it is ``torch.save`` d and read by the
grader with ``torch.load(weights_only=True)``, which builds plain data only. :func:`child_main` is
a child's loop: the student's source executed once, then one call after another.
"""
from __future__ import annotations

import builtins
import io
import itertools
import os
import pickle
import sys
import threading
import types
import weakref

import torch

_SCALARS = (bool, int, float, complex, str)
_NOT_HANDED = (types.ModuleType, types.FrameType, types.TracebackType, types.CodeType,
               types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_IDS = itertools.count()
_CHILD = {"conn": None, "sent": [], "lock": threading.Lock()}  # in a child: its pipe, the tensors it sent


class _Handle(int):
    """Grader -> child: the id of an object that stays in the grader."""


class _Method:
    """Grader -> child: the attribute read is callable."""


def _base(v):
    return next(base for base in _SCALARS if isinstance(v, base))(v)  # an IntEnum, a numpy.float64


def encode(v, other, tensors: list):
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
        return (list if isinstance(v, list) else tuple)(encode(x, other, tensors) for x in v)
    if isinstance(v, dict) and all(k is None or type(k) in _SCALARS for k in v):
        return {k: encode(x, other, tensors) for k, x in v.items()}
    return other(v)


def hand_over(v, table: dict, gens: list):
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


def resolve(v, table: dict, tensors: list, bad: list):
    """In the grader: a child's message with its handles resolved (unknown ids into ``bad``)."""
    if isinstance(v, dict) and list(v) == ["__handle__"]:
        known = isinstance(hid := v["__handle__"], int) and hid in table
        bad += [] if known else [hid]
        return table[hid] if known else None
    if isinstance(v, dict):
        return {k: resolve(x, table, tensors, bad) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(resolve(x, table, tensors, bad) for x in v)
    tensors += [v] if isinstance(v, torch.Tensor) else []
    return v


def serve(request, table: dict, mirror: list) -> tuple:
    """In the grader: a child's ("get", id, name) or ("call", id, name or None, args, kwargs) done on
    the real object: ("value" or "error", ..., the tensors sent in this call changed in place since)."""
    tensors, bad = [], []
    request = resolve(request, table, tensors, bad)
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
            answer = ("value", encode(value, lambda v: hand_over(v, table, []), []))
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
            data = _dump(encode(request, _refuse, sent))
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


def child_main(conn, source: str, name: str, work: str | None, hidden: list | None) -> None:
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
                reply = ("return", encode(result, _refuse, []), [g.get_state() for g in gens])
            except TypeError as error:
                reply = ("raise", "TypeError", f"returned {error}")
        except BaseException as error:  # a message that cannot be shown ends the child
            reply = ("raise", type(error).__name__, str(error))
        conn.send_bytes(_dump(reply))
