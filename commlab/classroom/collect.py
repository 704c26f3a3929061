"""A submission's answers, collected from its executed notebook as plain data.

Grading has two halves that never share a process (:mod:`commlab.classroom.grade` runs them):
this module runs the student's notebook and writes down what each answer cell left behind;
:mod:`commlab.classroom.score` judges those answers in a fresh process. Nothing the notebook does
reaches a score, only an answer.

**The run** (``python -m commlab.classroom.collect <notebook> <answers.jsonl> <hidden>``, in a
throwaway folder, isolated there unless ``hidden`` is ``null``: :mod:`commlab.classroom.isolation`): the notebook, with the grader's cells around each answer cell (see
:func:`grader_cells`), is executed by nbclient in a fresh kernel, errors allowed. Before each
answer cell, :func:`commlab.classroom.limits.exercise` deletes the exercise's variable, gives the
cell its time limit, and replaces the chapter's check by a stub (its verdict would count for
nothing, and running it would cost the time twice); after it, :func:`record` appends the
variable's value to the answers file. The runner makes itself a child subreaper and, when the
notebook ends, kills every process the kernel left behind, double-forked daemons included.

**Plain data** (:func:`plain`): None, booleans, numbers, strings, lists, tuples and dicts of
them; a tensor or numpy array as ``{"__tensor__": values, "dtype": ...}``; a function as
``{"__function__": source}``, its source preceded by what it uses from the notebook
(:func:`function_source`: imports, helper functions, constants); any other object with
``__float__`` as that float (evaluated here, in the kernel, where no check and no expected value
exists); anything else as ``{"__unsupported__": type name}``.
"""
from __future__ import annotations

import ast
import inspect
import json
import math
import os
import sys
import textwrap
import types
from pathlib import Path

ANSWERS = "COMMLAB_ANSWERS"  # the environment variable naming the answers file in the kernel
MAX_VALUES = 1_000_000       # values of one tensor answer


def plain(value, namespace=None, depth: int = 0):
    """``value`` as JSON-ready plain data (this module's docstring says how)."""
    import numpy as np
    import torch

    if depth > 20:
        return {"__unsupported__": "nesting deeper than 20"}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, np.generic):
        return plain(value.item(), namespace, depth + 1)
    if isinstance(value, (np.ndarray, torch.Tensor)):
        t = torch.as_tensor(value).detach().cpu()
        if t.numel() > MAX_VALUES:
            return {"__unsupported__": f"a tensor of {t.numel():,} values (at most {MAX_VALUES:,})"}
        return {"__tensor__": t.tolist(), "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
    if isinstance(value, (list, tuple)):
        return {"__" + type(value).__name__ + "__": [plain(v, namespace, depth + 1) for v in value]} \
            if isinstance(value, tuple) else [plain(v, namespace, depth + 1) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: plain(v, namespace, depth + 1) for k, v in value.items()}}
    if isinstance(value, types.FunctionType):
        return {"__function__": function_source(value, namespace or {})}
    if hasattr(type(value), "__float__"):
        try:
            return float(value)
        except Exception as e:  # noqa: BLE001 - the answer's own conversion failed
            return {"__unsupported__": f"{type(value).__name__} (float() raised {type(e).__name__})"}
    return {"__unsupported__": type(value).__name__}


def _names(code: types.CodeType) -> set[str]:
    """Every global name a function's code (and the code nested in it) reads."""
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names(const)
    return found


def _source(fn: types.FunctionType, name: str) -> str:
    """The source that defines ``fn`` as ``name``: a def as written, a lambda assigned to name."""
    text = textwrap.dedent(inspect.getsource(fn))
    if fn.__name__ != "<lambda>":
        return text + ("" if fn.__name__ == name else f"\n{name} = {fn.__name__}\n")
    tree = ast.parse(text)
    lam = next(n for n in ast.walk(tree) if isinstance(n, ast.Lambda))
    return f"{name} = {ast.get_source_segment(text, lam)}\n"


def function_source(fn: types.FunctionType, namespace: dict) -> str:
    """Source that defines ``__answer__`` as ``fn``, preceded by the imports, helper functions and
    plain constants of ``namespace`` (the notebook's) that it reads, recursively. A name it reads
    that cannot be written down is listed in a comment; the function then fails where it uses it."""
    lines, seen, missing = [], set(), []
    home = namespace.get("__name__", "__main__")  # the notebook's functions are defined in it

    def visit(f):
        for name in sorted(_names(f.__code__)):
            if name in seen or name not in namespace:
                continue
            seen.add(name)
            v = namespace[name]
            if isinstance(v, types.ModuleType):
                lines.append(f"import {v.__name__} as {name}" if name != v.__name__.split(".")[0] or "." in v.__name__
                             else f"import {v.__name__}")
            elif isinstance(v, types.FunctionType) and v.__module__ == home:
                visit(v)
                lines.append(_source(v, name))
            elif getattr(v, "__module__", None) not in (None, home) and \
                    "<" not in getattr(v, "__qualname__", "<"):
                lines.append(f"from {v.__module__} import {v.__qualname__.split('.')[0]} as {name}")
            elif v is None or isinstance(v, (bool, int, float, str)):
                lines.append(f"{name} = {v!r}")
            else:
                missing.append(f"{name} ({type(v).__name__})")

    visit(fn)
    note = [f"# not collected from the notebook: {', '.join(missing)}"] if missing else []
    return "\n".join(note + lines + [_source(fn, "__answer__")])


def record(exercise: str, variable: str) -> None:
    """Append exercise's answer (the kernel's ``variable``) to the answers file, with what the
    time limit saw: whether the answer cell was stopped or raised."""
    from IPython import get_ipython

    from .limits import _STATE

    namespace = get_ipython().user_ns
    entry = {"exercise": exercise, "stopped": _STATE["stopped"] == exercise,
             "raised": _STATE["raised"] if _STATE["exercise"] == exercise else None}
    if variable in namespace:
        try:
            entry["value"] = plain(namespace[variable], namespace)
        except Exception as e:  # noqa: BLE001 - the answer could not be written down: said, not hidden
            entry["value"] = {"__unsupported__": f"{type(namespace[variable]).__name__} ({type(e).__name__}: {e})"}
    with open(os.environ[ANSWERS], "a") as f:
        f.write(json.dumps(entry) + "\n")


def grader_cells(nb, marks: dict, seconds: float):
    """The notebook to execute: before each answer cell (``marks``: cell index -> exercise),
    the limit and the stubbed check; after it, :func:`record`."""
    import nbformat

    cells = []
    for i, cell in enumerate(nb.cells):
        ex = marks.get(i)
        if ex is not None:
            cells.append(nbformat.v4.new_code_cell(
                "from commlab.classroom.limits import exercise\n"
                f"exercise({ex.name!r}, {float(seconds)!r}, {ex.variable!r}, ({ex.chapter!r}, {ex.check!r}))"))
        cells.append(cell)
        if ex is not None:
            cells.append(nbformat.v4.new_code_cell(
                f"from commlab.classroom.collect import record\nrecord({ex.name!r}, {ex.variable!r})"))
    out = nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)
    out.nbformat_minor = nb.nbformat_minor
    return out


def run(notebook: Path, answers: Path, hidden: list[str] | None) -> None:
    """Execute ``notebook`` (already holding the grader's cells) in a fresh kernel with errors
    allowed, its answers going to ``answers``; then end every process it left behind. With
    ``hidden`` (a list, possibly empty), first :func:`~commlab.classroom.isolation.isolate` this
    process in the current folder, those paths hidden; None: no isolation."""
    import nbformat
    from nbclient import NotebookClient

    from .reaper import become_subreaper, end_descendants

    become_subreaper()
    if hidden is not None:
        from .isolation import isolate

        isolate(Path.cwd(), hidden)
    os.environ[ANSWERS] = str(answers.resolve())
    Path(answers).write_text("")
    nb = nbformat.read(notebook, as_version=4)
    try:
        NotebookClient(nb, timeout=None, allow_errors=True, kernel_name="python3",
                       resources={"metadata": {"path": str(Path.cwd())}}).execute()
    finally:
        end_descendants()


if __name__ == "__main__":
    run(Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3]))
