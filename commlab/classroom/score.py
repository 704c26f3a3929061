"""Scores computed where a student's code cannot reach them.

``python -m commlab.classroom.score <exercises.json> <answers.jsonl> <scores.json> <seconds> <hidden>``

runs in a fresh process that the grader starts for one submission after its notebook has run
(:mod:`commlab.classroom.collect`). In this order:

1. it imports the chapter's checks (``commlab.chapters.exercises.chNN``) before it reads a single
   student value, so nothing a student wrote can replace a check;
2. it reads the answers as data (JSON: numbers, strings, lists, tensors; a function as source);
   no student object is ever unpickled or executed here;
3. it calls each exercise's check on its answer, the check's printed message captured. A function
   answer runs in a :class:`~commlab.classroom.sandbox.Sandbox`: a child process per concurrent
   call, reached by the check through a proxy, so the check's frames, the expected values in them
   and the check itself stay in this process; whatever the check passes that is not plain data (a
   ``Comm``, a compressor) stays here too and is used by the student's code through a handle.
   A function's sandbox has ``seconds`` for the whole check;
4. it ends every process the submission's code started, and only then writes the scores:
   ``{exercise: [points, message]}``, points 1 when the check returned True, else 0.

The student's kernel can change what it answers, never what an answer scores.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys
from pathlib import Path

DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")


class Unsupported:
    """An answer the notebook could not write down as data; a check sees it as this object."""

    def __init__(self, what: str):
        self.what = what

    def __repr__(self):
        return f"<an answer of type {self.what}, which the grader cannot collect as data>"


class FunctionAnswer:
    """A function answer's source; the check calls it through a sandbox, never here."""

    def __init__(self, source: str):
        self.source = source


def decode(value):
    """The answer :func:`commlab.classroom.collect.plain` wrote, as the check expects it."""
    import torch

    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__tensor__" in value:
        dtype = value.get("dtype")
        if dtype not in DTYPES:
            return Unsupported(f"tensor of dtype {dtype!r}")
        return torch.tensor(value["__tensor__"], dtype=getattr(torch, dtype)).reshape(value.get("shape", [-1]))
    if "__tuple__" in value:
        return tuple(decode(v) for v in value["__tuple__"])
    if "__dict__" in value:
        return {str(k): decode(v) for k, v in dict(value["__dict__"]).items()}
    if "__float__" in value:
        return float(value["__float__"]) if value["__float__"] in ("nan", "inf", "-inf") else Unsupported("float")
    if "__function__" in value:
        return FunctionAnswer(str(value["__function__"]))
    return Unsupported(str(value.get("__unsupported__", "unknown")))


def answers(path: Path) -> dict:
    """The last entry for each exercise in the answers file (one JSON object per line); lines
    that are not such an object are skipped."""
    found = {}
    for line in Path(path).read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("exercise"), str):
            found[entry["exercise"]] = entry
    return found


def _judge(check, answer, seconds: float, hidden: list | None) -> tuple[bool, str]:
    """(the check returned True, what it printed), the answer given as the check expects it."""
    said = io.StringIO()
    if isinstance(answer, FunctionAnswer):
        from .sandbox import Sandbox  # a child process per concurrent call: only for a function

        with Sandbox(answer.source, "__answer__", seconds, hidden) as box, contextlib.redirect_stdout(said):
            ok = check(box.function)
        if box.timed_out:
            return False, f"stopped after {seconds:g} s, the time limit of an exercise"
    else:
        with contextlib.redirect_stdout(said):
            ok = check(answer)
    return ok is True, " ".join(said.getvalue().split())


def load_checks(exercises: list[dict]) -> dict:
    """{exercise: its check function}, imported from ``commlab.chapters.exercises``."""
    return {ex["name"]: getattr(importlib.import_module(f"commlab.chapters.exercises.{ex['chapter']}"), ex["check"])
            for ex in exercises}


def score(exercises: list[dict], checks: dict, found: dict, seconds: float, hidden: list | None = None) -> dict:
    """{exercise: (points, message)} for each of ``exercises`` (dicts of name, chapter, check,
    variable), by ``checks`` (:func:`load_checks`), from the collected answers ``found``; a
    function answer's sandbox isolated with ``hidden`` covered (None: not isolated)."""
    out = {}
    for ex in exercises:
        entry = found.get(ex["name"])
        if entry is None:
            out[ex["name"]] = (0.0, "no answer was collected: the notebook stopped before this exercise's cell ran")
        elif entry.get("stopped"):
            out[ex["name"]] = (0.0, f"the answer cell was stopped after {seconds:g} s, the time limit of an "
                                    "exercise's cell")
        elif "value" not in entry:
            raised = entry.get("raised")
            out[ex["name"]] = (0.0, f"the answer cell raised {raised}" if raised else
                               f"{ex['variable']} is not defined: the exercise's cell did not run to its end")
        else:
            ok, said = _judge(checks[ex["name"]], decode(entry["value"]), seconds, hidden)
            raised = entry.get("raised")
            if raised and not ok:
                said = f"the answer cell raised {raised}; the check said: {said}"
            out[ex["name"]] = (1.0, "correct") if ok else (0.0, said or f"{ex['check']} did not return True")
    return out


def main(argv: list[str]) -> None:
    from ..files import write_atomic
    from .isolation import shield
    from .reaper import become_subreaper, end_descendants

    exercises, found_at, out, seconds = json.loads(Path(argv[1]).read_text()), Path(argv[2]), Path(argv[3]), \
        float(argv[4])
    hidden = json.loads(argv[5]) if len(argv) > 5 else None
    become_subreaper()
    shield()
    checks = load_checks(exercises)  # before any answer is read
    try:
        result = score(exercises, checks, answers(found_at), seconds, hidden)
    finally:
        end_descendants()
    write_atomic(out, json.dumps({k: list(v) for k, v in result.items()}, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv)
