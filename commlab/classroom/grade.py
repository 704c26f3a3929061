"""Grade a folder of submitted notebooks, offline, into a gradebook a student's code cannot forge.

The folder holds one folder per student, each with that student's chapter notebooks (the student
edition of :mod:`commlab.classroom.edition`, answered). Each notebook is graded in two processes
that share nothing but data:

1. **collect** (:mod:`commlab.classroom.collect`): the notebook runs in a fresh kernel, in a
   throwaway folder, and each exercise's answer is written down as plain data (numbers, strings,
   tensors; a function as its source);
2. **score** (:mod:`commlab.classroom.score`): a fresh process imports the checks, then reads
   those answers and judges them; a function answer runs in a sandboxed child process
   (:mod:`commlab.classroom.sandbox`). Points come from this process alone, clamped to 0..1.

The student's kernel is never asked for a score. One row per student and exercise comes out:

    student, chapter, exercise, points, max_points, message

where ``message`` is what the check said (``correct`` when it passed). A chapter that some
student handed in and another did not gets the other "not submitted" rows, so every student has
the same rows.

**Which notebook, and which cell, is graded** (nothing is chosen silently; each rule's outcome
is in the gradebook's message or the student's feedback, and printed):

* A notebook is a chapter's by the assignment name the student edition carries, else by its file name
  beginning with the chapter's (``01_why_communication-Copy1.ipynb`` is chapter 01's). Any other
  ``.ipynb`` file is ignored, and named in the student's feedback.
* Two notebooks of one chapter from one student: neither is graded ("keep one").
* A file that is not a notebook (not JSON): its chapter scores 0 with the reason.
* An exercise's answer cell is the code cell that calls its check (``ch01.check_c2c_ratio(...)``),
  found anew in every submission, so a notebook of the book instead of the handout, or one whose
  cells were moved, is graded the same way. A missing answer cell scores 0 ("missing"), and the
  next exercise is never graded on its variable: each exercise's variable is deleted before its
  answer cell runs. Of several cells that call one check, the last is graded, and the message says so.

What a broken submission costs: an exception costs the exercise it happens in (the notebook runs
with errors allowed); an answer cell that runs past ``exercise_limit`` seconds is stopped and
costs that exercise (:mod:`commlab.classroom.limits`), and so does a function answer whose check
runs past it in the sandbox; a notebook still running after ``notebook_limit`` seconds is killed
with its kernel, the answers collected until then are scored, and the rest score 0 with that reason.

**As it goes**: each notebook's result is saved in ``journal`` (a folder) as soon as it is
graded, and printed; with ``resume``, results already there for an unchanged notebook are kept,
so a run that crashed goes on where it stopped.

:mod:`commlab.classroom.gradebook` writes the tables and the feedback files.
"""
from __future__ import annotations

import hashlib
import json
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import nbformat
import pandas as pd

from ..files import write_atomic
from .edition import INSTRUCTOR, chapters, exercises
from .gradebook import LONG, NOT_SUBMITTED, one_line
from .submission import MAX_POINTS, grade_submission

# ----- which notebooks -------------------------------------------------------------------------
def _chapter_of(path: Path, known: dict) -> tuple[str | None, object]:
    """(the chapter, the notebook or the reason it cannot be read) of a handed-in file."""
    try:
        nb = nbformat.read(path, as_version=4)
        name = nb.metadata.get("otter", {}).get("assignment_name")
    except Exception as e:  # noqa: BLE001 - not a notebook: graded 0 with the reason, or ignored
        nb, name = f"{path.name} is not a notebook ({type(e).__name__}: {one_line(e)[:120]})", None
    if name in known:
        return name, nb
    return next((c for c in known if path.stem.startswith(c)), None), nb


def handed_in(student: Path, known: dict) -> tuple[dict, list[str]]:
    """A student's notebooks by chapter (a notebook, or the reason it is not graded) and notes on
    the files that are not graded, by the rules of this module's docstring."""
    by_chapter, notes = {}, []
    for path in sorted(student.glob("*.ipynb")):
        chapter, nb = _chapter_of(path, known)
        if chapter is None:
            notes.append(f"{path.name} was not graded: it is not a notebook of the chapters graded "
                         f"({', '.join(known)})")
            continue
        by_chapter.setdefault(chapter, []).append((path, nb))
    found = {}
    for chapter, files in by_chapter.items():
        if len(files) > 1:
            names = ", ".join(p.name for p, _ in files)
            found[chapter] = f"not graded: {len(files)} notebooks of this chapter were handed in ({names}); keep one"
            notes.append(f"{names}: {len(files)} notebooks of chapter {chapter}, so neither was graded")
        else:
            path, nb = files[0]
            found[chapter] = f"not graded: {nb}" if isinstance(nb, str) else (path, nb)
    return found, notes


def as_handout(nb, chapter: str, book_exercises) -> tuple[object, dict, dict]:
    """Where this module's rules put each exercise's answer: the last code cell that calls its
    check. Returns the notebook (a copy), {cell index: exercise} and, per exercise whose cell is
    missing or repeated, what the gradebook must say (and whether it scores 0)."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))  # a copy
    nb.metadata.setdefault("otter", {})["assignment_name"] = chapter
    calls = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            for ex in book_exercises:
                if re.search(rf"\b{ex.chapter}\.{ex.check}\(", cell.source):
                    calls.setdefault(ex.name, []).append(i)
    said, marks = {}, {}
    for ex in book_exercises:
        cells = calls.get(ex.name, [])
        if not cells:
            said[ex.name] = (f"the answer cell is missing: no cell calls {ex.chapter}.{ex.check}({ex.variable})", True)
            continue
        marks[cells[-1]] = ex
        if len(cells) > 1:
            said[ex.name] = (f"({len(cells)} cells call {ex.chapter}.{ex.check}; the last one was graded)", False)
    return nb, marks, said


def _grade_one(handed, chapter, book_exercises, exercise_limit, notebook_limit, hidden) -> dict | str:
    """One student's chapter: {exercise: (points, message)}, or the reason it has none."""
    if isinstance(handed, str):
        return handed
    nb, marks, said = as_handout(handed[1], chapter, book_exercises)
    got = grade_submission(nb, marks, book_exercises, exercise_limit, notebook_limit, hidden)
    if isinstance(got, str):
        return got
    for name, (text, missing) in said.items():
        points, message = got.get(name, (0.0, "not graded"))
        got[name] = (0.0, text) if missing else (points, f"{message} {text}")
    return got


ISOLATION = ("namespace", "none")


def _check_isolation(isolate: str) -> None:
    """Refuse an isolation level that is unknown, or not available here, with the reason."""
    if isolate not in ISOLATION:
        raise ValueError(f"isolate={isolate!r} is not one of {', '.join(ISOLATION)}")
    if isolate == "namespace":
        from .isolation import available

        why = available()
        if why:
            raise ValueError(f"isolate='namespace' is not available here ({why}); grade with isolate='none' "
                             "(--isolate none) to run submissions with your own access, knowing what that "
                             "gives up (the guide's threat model)")


# ----- the whole folder ------------------------------------------------------------------------
def _key(handed) -> str:
    """What a journal entry was made from: the notebook's bytes (a changed notebook is graded again)."""
    return handed if isinstance(handed, str) else hashlib.sha256(Path(handed[0]).read_bytes()).hexdigest()


def grade(folder, chapter_spec: str | None = None, exercise_limit: float = 60, notebook_limit: float = 900,
          jobs: int = 1, journal=None, resume: bool = False, isolate: str = "namespace",
          say=print) -> pd.DataFrame:
    """The gradebook of ``folder`` (one folder per student) as a DataFrame of
    :data:`~commlab.classroom.gradebook.LONG`; ``attrs["notes"]`` holds each student's notes on
    the files handed in. ``journal``: a folder where each notebook's result is saved as it is
    graded (default: a temporary one); ``resume``: keep the results saved there for unchanged
    notebooks. ``isolate``: "namespace" (the student's code sees a read-only system, its own
    throwaway folder, and not the other submissions, the journal or the reference solutions:
    :mod:`~commlab.classroom.isolation`; refused where the system cannot) or "none" (it runs as
    you, with your access). ``say`` prints progress."""
    folder = Path(folder).resolve()  # each notebook runs in a folder of its own
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of student folders")
    for name, value in (("exercise_limit", exercise_limit), ("notebook_limit", notebook_limit), ("jobs", jobs)):
        if not value > 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")
    _check_isolation(isolate)
    known = {p.stem: p for p in chapters(chapter_spec)}
    students = sorted(p for p in folder.iterdir() if p.is_dir())
    if not students:
        raise ValueError(f"{folder} holds no student folders (one folder per student, with their notebooks)")
    found = {s.name: handed_in(s, known) for s in students}
    graded = [c for c in known if any(c in f for f, _ in found.values())]
    if not graded:
        raise ValueError(f"no notebook in {folder}'s student folders is a chapter ({', '.join(known)})")
    book = {c: exercises(nbformat.read(known[c], as_version=4)) for c in graded}
    with tempfile.TemporaryDirectory() as tmp:
        journal = Path(journal) if journal is not None else Path(tmp) / "journal"
        journal.mkdir(parents=True, exist_ok=True)
        hidden = None if isolate == "none" else [str(folder), str(journal.resolve())] + \
            ([str(INSTRUCTOR)] if INSTRUCTOR.is_dir() else [])
        work = [(s, c, f[c]) for s, (f, _) in found.items() for c in graded if c in f]
        saved = {}
        for s, c, handed in work:
            entry = journal / f"{s}--{c}.json"
            if resume and entry.exists():
                kept = json.loads(entry.read_text())
                if kept.get("key") == _key(handed):
                    saved[(s, c)] = kept["result"]
        todo = [w for w in work if (w[0], w[1]) not in saved]
        say(f"grading {len(todo)} notebook(s) of {len(students)} student(s)"
            + (f"; {len(saved)} kept from {journal}" if saved else "")
            + ("; isolation: none, the submissions run as you" if isolate == "none" else
               "; isolation: each submission sees a read-only system and its own folder"))

        def run(w):
            s, c, handed = w
            result = _grade_one(handed, c, book[c], exercise_limit, notebook_limit, hidden)
            write_atomic(journal / f"{s}--{c}.json", json.dumps({"key": _key(handed), "result": result}))
            return w, result

        with ThreadPoolExecutor(max_workers=int(jobs)) as pool:
            for n, finished in enumerate(as_completed([pool.submit(run, w) for w in todo]), 1):
                (s, c, _), result = finished.result()
                saved[(s, c)] = result
                done = "no points" if isinstance(result, str) else \
                    f"{sum(p for p, _ in result.values()):g} of {len(book[c]):g} points"
                say(f"  [{n}/{len(todo)}] {s} {c}: {done}")
    rows = []
    for student in found:
        for c in graded:
            got = saved.get((student, c), NOT_SUBMITTED)
            for ex in book[c]:
                points, message = (0.0, got) if isinstance(got, str) else got.get(ex.name, (0.0, "not graded"))
                rows.append((student, c, ex.name, float(points), MAX_POINTS, one_line(message)))
    table = pd.DataFrame(rows, columns=LONG)
    table.attrs["notes"] = {s: notes for s, (_, notes) in found.items() if notes}
    return table
