"""One submission graded in two processes that share nothing but data (:mod:`commlab.classroom.grade`
says why): its notebook run in a throwaway folder to collect the answers
(:mod:`~commlab.classroom.collect`), then the answers scored in a fresh process
(:mod:`~commlab.classroom.score`). The grader's own files (the exercises, a copy of the answers,
the scores) are in a private folder that isolation hides from the student's code; points are
clamped to 0..:data:`MAX_POINTS` whatever the scores file says.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from .reaper import end_tree

MAX_POINTS = 1.0  # every exercise is one question of one point


def _run(args: list[str], cwd: Path, limit: float) -> str | None:
    """Run ``python -m commlab.classroom.<args>`` in ``cwd``; None, or why it did not finish."""
    proc = subprocess.Popen([sys.executable, "-m", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        log, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        end_tree(proc)
        return f"ran past its time limit of {limit:g} s and was stopped"
    if proc.returncode:
        last = [line for line in log.splitlines() if line.strip()][-1:] or ["no output"]
        return f"failed ({last[0].strip()[:200]})"
    return None


def _read_answers(path: Path, most: int = 64 << 20) -> str | None:
    """The answers file the kernel wrote (a regular file, at most ``most`` bytes), or None."""
    if path.is_symlink() or not path.is_file():
        return None
    with open(path, "rb") as f:
        return f.read(most).decode(errors="replace")


def grade_submission(nb, marks: dict, book_exercises, exercise_limit: float, notebook_limit: float,
                      hidden: list[str] | None) -> dict | str:
    """{exercise: (points, message)} of one notebook: run in a throwaway folder to collect its
    answers (:mod:`~commlab.classroom.collect`), isolated there with ``hidden`` covered (None: not
    isolated), then scored in a fresh process (:mod:`~commlab.classroom.score`); or why it has no
    scores. The grader's own files are in a private folder, hidden from the student's code."""
    from .collect import grader_cells

    with tempfile.TemporaryDirectory() as private, tempfile.TemporaryDirectory() as throwaway:
        private, work = Path(private), Path(throwaway) / "work"
        work.mkdir()
        cover = None if hidden is None else json.dumps([*hidden, str(private)])
        nbformat.write(grader_cells(nb, marks, exercise_limit), work / "submission.ipynb")
        ran = _run(["commlab.classroom.collect", "submission.ipynb", "answers.jsonl", cover], work, notebook_limit)
        collected = _read_answers(work / "answers.jsonl")
        if collected is None:
            return f"not graded: the notebook {ran or 'left no answers'}"
        (private / "answers.jsonl").write_text(collected)
        (private / "exercises.json").write_text(json.dumps([
            {"name": ex.name, "chapter": ex.chapter, "check": ex.check, "variable": ex.variable}
            for ex in book_exercises]))
        limit = 60 + exercise_limit * len(book_exercises)
        failed = _run(["commlab.classroom.score", "exercises.json", "answers.jsonl", "scores.json",
                       str(exercise_limit), cover or "null"], private, limit)
        scores = private / "scores.json"
        if failed or not scores.exists():
            return f"not graded: scoring {failed or 'wrote no scores'}"
        got = {name: (min(max(float(p), 0.0), MAX_POINTS), str(m))
               for name, (p, m) in json.loads(scores.read_text()).items()}
    if ran:
        stop = f"not graded: the notebook {ran} before this exercise's answer was collected"
        got = {k: (v if not v[1].startswith("no answer was collected") else (0.0, stop)) for k, v in got.items()}
    return got
