"""Grade a folder of submitted notebooks with otter-grader, offline, into a gradebook.

The folder holds one folder per student, each with that student's chapter notebooks (the student
edition of :mod:`commlab.classroom.edition`, answered). :func:`grade` builds each chapter's
autograder from the book, then runs ``otter run`` on every notebook: otter executes it in a fresh
kernel of this environment (no Docker, no network), runs each exercise's check right after its
answer cell, and writes its results as JSON. One row per student and exercise comes out:

    student, chapter, exercise, points, message

where ``message`` is what the check said (``correct`` when it passed). A notebook is found by
the assignment name otter wrote into it, else by its file name. A chapter that some student
handed in and another did not gets the other "not submitted" rows, so every student has the
same rows.

What a broken submission costs: an exception costs the exercise it happens in (otter executes
with errors allowed); an answer cell or check that runs past ``exercise_limit`` seconds is
stopped and costs that exercise (:mod:`commlab.classroom.limits`); a notebook still running after
``notebook_limit`` seconds is killed with its kernel, and its exercises score 0 with that reason.
The rows are sorted and the messages are the checks' own, so the same submissions give the same
gradebook.

:func:`summary` is the view of who is stuck: per exercise, how many solved it and the most
common message of those who did not.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pandas as pd

from .edition import assign, chapters, exercises

COLUMNS = ["student", "chapter", "exercise", "points", "message"]
NOT_SUBMITTED = "not submitted"


def _chapter_of(path: Path, known: dict) -> str | None:
    try:
        name = nbformat.read(path, as_version=4).metadata.get("otter", {}).get("assignment_name")
    except Exception:  # noqa: BLE001 - an unreadable notebook is graded (and refused) by otter
        name = None
    for candidate in (name, path.stem):
        if candidate in known:
            return candidate
    return None


def _message(output: str) -> str:
    """The failing check's message from otter's test output: the lines after the test's
    source line (``Error at line N in test ...`` and the line itself), without the exception's
    name when it is the check's refusal."""
    lines = [line.strip() for line in output.splitlines()]
    at = next((i for i, line in enumerate(lines) if line.startswith("Error at line")), None)
    text = " ".join(line for line in lines[at + 2:] if line) if at is not None else " ".join(lines[-1:])
    return text.removeprefix("NotSolved: ")


def _kill_tree(proc: subprocess.Popen) -> None:
    import psutil  # installed with ipykernel

    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    proc.kill()
    for child in family:  # the kernel otter started, and whatever it started
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait()


def _run_otter(notebook: Path, autograder: Path, limit: float) -> dict | str:
    """Otter's results for one notebook ({exercise: (points, message)}), or why there are none."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results"
        out.mkdir()
        cmd = [sys.executable, "-m", "otter", "run", "-a", str(autograder), "-o", str(out), "--no-logo",
               str(notebook)]
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            log, _ = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_tree(proc)
            return f"not graded: the notebook ran past its time limit of {limit:g} s and was stopped"
        results = out / "results.json"
        if not results.exists():
            last = [line for line in log.splitlines() if line.strip()][-1:] or ["no output"]
            return f"not graded: otter failed ({last[0].strip()})"
        tests = json.loads(results.read_text())["tests"]
    return {t["name"]: (float(t["score"]), "correct" if t["score"] == t["max_score"] else _message(t["output"]))
            for t in tests if "max_score" in t}


def grade(folder, chapter_spec: str | None = None, exercise_limit: float = 60,
          notebook_limit: float = 900, jobs: int = 1) -> pd.DataFrame:
    """The gradebook of ``folder`` (one folder per student) as a DataFrame of :data:`COLUMNS`."""
    folder = Path(folder).resolve()  # otter runs in a folder of its own
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of student folders")
    for name, value in (("exercise_limit", exercise_limit), ("notebook_limit", notebook_limit), ("jobs", jobs)):
        if not value > 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")
    known = {p.stem: p for p in chapters(chapter_spec)}
    students = sorted(p for p in folder.iterdir() if p.is_dir())
    if not students:
        raise ValueError(f"{folder} holds no student folders (one folder per student, with their notebooks)")
    handed = {s.name: {c: nb for nb in sorted(s.glob("*.ipynb")) if (c := _chapter_of(nb, known))} for s in students}
    graded = sorted({c for found in handed.values() for c in found})
    if not graded:
        raise ValueError(f"no notebook in {folder}'s student folders is a chapter ({', '.join(known)})")
    with tempfile.TemporaryDirectory() as tmp:
        assign([known[c] for c in graded], Path(tmp) / "student", exercise_limit, Path(tmp) / "autograders")
        work = [(s, c, nb) for s, found in handed.items() for c, nb in found.items()]
        with ThreadPoolExecutor(max_workers=int(jobs)) as pool:
            results = dict(zip([(s, c) for s, c, _ in work], pool.map(
                lambda w: _run_otter(w[2], Path(tmp) / "autograders" / f"{w[1]}-autograder.zip", notebook_limit),
                work)))
    rows = []
    for student in handed:
        for c in graded:
            got = results.get((student, c), NOT_SUBMITTED)
            for ex in exercises(nbformat.read(known[c], as_version=4)):
                points, message = (0.0, got) if isinstance(got, str) else got.get(ex.name, (0.0, "not graded"))
                rows.append((student, c, ex.name, points, message))
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(gradebook: pd.DataFrame) -> pd.DataFrame:
    """Per exercise: how many students solved it, how many handed it in, of how many, and the
    most common message of those who handed it in and did not solve it (with how many got it;
    a tie goes to the first student in the gradebook's order)."""
    rows = []
    for (chapter, exercise), g in gradebook.groupby(["chapter", "exercise"], sort=False):
        handed = g[g.message != NOT_SUBMITTED]
        failing = Counter(handed.loc[handed.points < 1, "message"])
        common, count = failing.most_common(1)[0] if failing else ("", 0)
        rows.append((chapter, exercise, int((g.points >= 1).sum()), len(handed), len(g), common, count))
    return pd.DataFrame(rows, columns=["chapter", "exercise", "solved", "handed in", "students",
                                       "most common failure", "of"])
