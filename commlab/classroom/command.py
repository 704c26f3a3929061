"""``python -m commlab classroom student | grade``: the instructor's two commands.

* ``student --out DIR [--chapters 01,06]``: the student edition of the chapters (all by default)
  in DIR, one notebook per chapter, to hand out (:func:`commlab.classroom.edition.assign`).
* ``grade DIR --out gradebook.csv``: grade DIR (one folder per student, each with that student's
  notebooks) offline; write the gradebook, its per-exercise summary beside it
  (``gradebook_summary.csv``), and print the summary (:func:`commlab.classroom.grade.grade`).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd


def add(sub, fmt) -> None:
    """Add the ``classroom`` subcommand to the command line's subparsers ``sub``."""
    c = sub.add_parser("classroom", help="the student edition, and a gradebook of submitted notebooks",
                       formatter_class=fmt, description=__doc__.split("\n\n")[1].strip())
    csub = c.add_subparsers(dest="action", required=True, metavar="{student,grade}")
    s = csub.add_parser("student", help="write the student edition of the chapters", formatter_class=fmt)
    s.add_argument("--out", required=True, help="the folder to write the student notebooks to")
    s.add_argument("--chapters", default=None, help="chapter numbers, e.g. 01,06 (default: every chapter)")
    g = csub.add_parser("grade", help="grade a folder of student folders into a gradebook", formatter_class=fmt)
    g.add_argument("folder", help="one folder per student, each with that student's notebooks")
    g.add_argument("--out", required=True, help="the gradebook CSV to write")
    g.add_argument("--chapters", default=None, help="grade only these chapters, e.g. 01,06")
    g.add_argument("--exercise-limit", type=float, default=60.0,
                   help="seconds an exercise's answer cell, and its check, may run")
    g.add_argument("--notebook-limit", type=float, default=900.0, help="seconds a whole notebook may run")
    g.add_argument("--jobs", type=int, default=1, help="notebooks graded at once")


def run(p, a) -> int:
    """Run ``classroom student`` or ``classroom grade``; a bad argument ends with p.error."""
    from . import edition, grade

    try:
        if a.action == "student":
            written = edition.assign(edition.chapters(a.chapters), Path(a.out))
            print(f"the student edition of {len(written)} chapter(s), in {a.out}:")
            for path in written:
                print(f"  {path.name}")
            return 0
        book = grade.grade(a.folder, a.chapters, a.exercise_limit, a.notebook_limit, a.jobs)
    except (ValueError, FileNotFoundError) as e:
        p.error(str(e))
    table = grade.summary(book)
    out = Path(a.out)
    for frame, path in ((book, out), (table, out.with_name(f"{out.stem}_summary.csv"))):
        _write_csv(frame, path)
    students = book.student.nunique()
    print(f"graded {students} student(s); gradebook: {out}; summary: {out.with_name(out.stem + '_summary.csv')}")
    with pd.option_context("display.width", 160, "display.max_colwidth", 70):
        print(table.to_string(index=False))
    return 0


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` to ``path`` whole or not at all (a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".csv.part")
    os.close(fd)
    try:
        frame.to_csv(tmp, index=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
