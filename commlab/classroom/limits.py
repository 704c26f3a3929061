"""What runs inside a submission's kernel while it is graded: an exercise's time limit and the
verdict of its check.

**The time limit.** Before each exercise's answer cell, the grader inserts the cell
``exercise(name, seconds)`` (the otter plugin :class:`ExerciseTimeLimit` does it). The answer cell
and the check otter runs right after it then each get ``seconds`` of wall time: an IPython
``pre_run_cell`` hook arms a ``SIGALRM`` timer and ``post_run_cell`` disarms it. A cell that runs
over is stopped with :class:`ExerciseTimeout`; the notebook goes on with the next cell (otter
executes with errors allowed), so an infinite loop costs that exercise and nothing else. The
book's own cells run without this limit: only the whole notebook's limit in
:mod:`commlab.classroom.grade` applies to them. A loop inside one C call (which signals do not
interrupt) or one that catches the exception is stopped by that notebook limit instead.

**The verdict.** Each autograder test calls :func:`verdict`: it runs the chapter's check function
on the student's variable, as the notebook cell does, with the check's printed message captured,
and raises :class:`NotSolved` with that message (on one line) unless the check returns True. So
the gradebook shows the message the student saw.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import signal

_STATE = {"exercise": None, "left": 0, "seconds": 0.0, "armed": False, "answer": False,
          "stopped": None, "raised": None}


class ExerciseTimeout(Exception):
    """An exercise's cell ran past its time limit."""


class NotSolved(AssertionError):
    """The check refused the answer; the message is the check's own."""


def _arm(info=None) -> None:
    _STATE["armed"] = _STATE["left"] > 0
    if _STATE["armed"]:
        _STATE["answer"] = _STATE["left"] == 2  # the first of the two cells is the answer
        _STATE["left"] -= 1
        signal.setitimer(signal.ITIMER_REAL, _STATE["seconds"])


def _disarm(result=None) -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
    error = getattr(result, "error_in_exec", None)
    if _STATE["armed"] and _STATE["answer"] and error is not None and not isinstance(error, ExerciseTimeout):
        _STATE["raised"] = f"{type(error).__name__}: {error}"
    _STATE["armed"] = False


def _stop_message() -> str:
    return f"stopped after {_STATE['seconds']:g} s, the time limit of an exercise's cell"


def _stop(signum, frame):
    _STATE["stopped"] = _STATE["exercise"]
    raise ExerciseTimeout(_stop_message())


def exercise(name: str, seconds: float, variable: str | None = None, check: tuple[str, str] | None = None) -> None:
    """Give the next two cells (the answer and the grader's cell after it) ``seconds`` each,
    for exercise ``name``, and note whether the answer cell raises; delete ``variable`` first, so
    that an answer cell that does not assign it is never graded on an earlier exercise's value.
    ``check``: (chapter, check) replaced by a stub for the rest of the run: the answer is judged
    after the notebook ends (:mod:`commlab.classroom.score`), so running the check here would
    cost its time for nothing. Runs in an IPython kernel's main thread (the one that receives signals)."""
    if not seconds > 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("exercise() sets a time limit on notebook cells: it runs in an IPython kernel")
    if _arm not in shell.events.callbacks["pre_run_cell"]:
        shell.events.register("pre_run_cell", _arm)
        shell.events.register("post_run_cell", _disarm)
        signal.signal(signal.SIGALRM, _stop)
    if variable is not None:
        shell.user_ns.pop(variable, None)
    if check is not None:
        module = importlib.import_module(f"commlab.chapters.exercises.{check[0]}")
        setattr(module, check[1], _graded_later)
    _STATE.update(exercise=name, left=2, seconds=float(seconds), stopped=None, raised=None)


def _graded_later(answer=None, *args, **kwargs):
    print("(graded after the notebook has run, in a process of its own)")


def verdict(env: dict, chapter: str, check: str, variable: str) -> None:
    """Run ``commlab.chapters.exercises.<chapter>.<check>`` on ``env[variable]``; raise
    :class:`NotSolved` with the check's message unless it returns True. An answer cell that was
    stopped scores nothing; one that raised is named in the message."""
    name = f"{chapter}_{check[len('check_'):]}"
    raised = _STATE["raised"] if _STATE["exercise"] == name else None
    if _STATE["stopped"] == name:
        raise NotSolved(f"the answer cell was {_stop_message()}")
    if variable not in env:
        raise NotSolved(f"the answer cell raised {raised}" if raised else
                        f"{variable} is not defined: the exercise's cell did not run to its end")
    fn = getattr(importlib.import_module(f"commlab.chapters.exercises.{chapter}"), check)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ok = fn(env[variable])
    if ok is not True:
        said = " ".join(out.getvalue().split()) or f"{check} returned {ok!r}"
        raise NotSolved(f"the answer cell raised {raised}; the check said: {said}" if raised else said)


class ExerciseTimeLimit:
    """An otter-grader plugin (``plugins`` in the autograder's configuration): before a
    submission runs, insert ``exercise(name, seconds, variable)`` before each answer cell (the cells otter
    marked with the exercise's test). Its configuration: ``{"seconds": <limit>, "variables":
    {exercise: the variable its cell assigns}}``. Otter calls
    the events a plugin defines; this one defines ``before_execution`` only."""

    def __init__(self, submission_path, submission_metadata, plugin_config):
        self.seconds = float((plugin_config or {}).get("seconds", 60))
        self.variables = dict((plugin_config or {}).get("variables") or {})

    def before_execution(self, submission):
        import nbformat

        cells = []
        for cell in submission.cells:
            tests = cell.get("metadata", {}).get("otter", {}).get("tests", [])
            if cell.cell_type == "code" and tests:
                cells.append(nbformat.v4.new_code_cell(
                    f"from commlab.classroom.limits import exercise\n"
                    f"exercise({tests[0]!r}, {self.seconds!r}, {self.variables.get(tests[0])!r})"))
            cells.append(cell)
        submission.cells = cells
        return submission
