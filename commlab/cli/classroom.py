"""``python -m commlab classroom student | grade``: the instructor's two commands.

* ``student --out DIR [--chapters 01,06]``: the student edition of the chapters (all by default)
  in DIR, one notebook per chapter, to hand out (:func:`commlab.classroom.edition.assign`).
* ``grade DIR --out gradebook.csv [--resume]``: grade DIR (one folder per student, each with that
  student's notebooks) offline, saying each notebook's result as it comes; write the gradebook
  (one row per student), the long table and the per-exercise summary beside it, and a feedback
  file per student (:mod:`commlab.classroom.gradebook`); print the summary. Each notebook's
  result is saved in ``<out>_journal/`` as it is graded; ``--resume`` keeps those of unchanged
  notebooks (:func:`commlab.classroom.grade.grade`).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

NAME = "classroom"

PLAIN_HELP = """The instructor's two commands.

student --out DIR [--chapters 01,06]: the student edition of the chapters (all by default) in DIR,
one notebook per chapter, to hand out.

grade DIR --out gradebook.csv [--resume]: grade DIR (one folder per student, each with that
student's notebooks) offline, saying each notebook's result as it comes; write the gradebook (one
row per student), the long table and the per-exercise summary beside it, and a feedback file per
student; print the summary. Each notebook's result is saved in <out>_journal/ as it is graded;
--resume keeps those of unchanged notebooks."""


def add(sub, fmt) -> None:
    """Add the ``classroom`` subcommand to the command line's subparsers ``sub``."""
    c = sub.add_parser(NAME, help="the student edition, and a gradebook of submitted notebooks",
                       formatter_class=fmt, description=PLAIN_HELP)
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
    g.add_argument("--isolate", default="namespace", choices=["namespace", "none"],
                   help="namespace: each submission sees a read-only system, its own throwaway folder, and not "
                        "the other submissions or the reference solutions (Linux); none: it runs with your access")
    g.add_argument("--resume", action="store_true",
                   help="keep the results already in <out>_journal/ for notebooks that did not change")


def run(p, a) -> int:
    """Run ``classroom student`` or ``classroom grade``; a bad argument ends with p.error."""
    from ..classroom import edition, grade, gradebook

    try:
        if a.action == "student":
            written = edition.assign(edition.chapters(a.chapters), Path(a.out))
            print(f"the student edition of {len(written)} chapter(s), in {a.out}:")
            for path in written:
                print(f"  {path.name}")
            return 0
        out = Path(a.out)
        journal = out.with_name(f"{out.stem}_journal")
        book = grade.grade(a.folder, a.chapters, a.exercise_limit, a.notebook_limit, a.jobs, journal=journal,
                           resume=a.resume, isolate=a.isolate)
    except (ValueError, FileNotFoundError) as e:
        p.error(str(e))
    written = gradebook.write(book, out, book.attrs.get("notes"))
    print(f"graded {book.student.nunique()} student(s); wrote {', '.join(str(w) for w in written[:3])} and "
          f"{len(written) - 3} feedback file(s) in {out.parent / 'feedback'}")
    for student, notes in book.attrs.get("notes", {}).items():
        for note in notes:
            print(f"  {student}: {note}")
    with pd.option_context("display.width", 160, "display.max_colwidth", 70):
        print(gradebook.summary(book).to_string(index=False))
    return 0
