"""What an instructor reads after grading: the gradebook in the shapes it is used in, and a
feedback file per student.

Grading produces the **long** table, one row per student and exercise:

    student, chapter, exercise, points, max_points, message

From it :func:`write` makes, beside the path it is given (``gradebook.csv``):

* ``gradebook.csv``, **one row per student**: ``Student``, ``SIS Login ID``, ``Section`` (empty),
  the points of each exercise (a column per exercise, named like ``ch01_c2c_ratio``), then
  ``Total`` and ``Maximum``. The first three are the columns Canvas matches students by when it
  imports grades (a student's name or ID, the SIS Login ID, the section), so name each student's
  folder by their login; every other column becomes an assignment of that name, so drop
  ``Total`` and ``Maximum`` before uploading there. Moodle's CSV import maps any column to a user
  field (the login, to "username") and each other column to a grade item.
* ``gradebook_long.csv``: the long table, with each exercise's maximum and the check's message.
* ``gradebook_summary.csv``: per exercise, who solved it and the most common failure.
* ``feedback/<student>.md``: each exercise, its points of its maximum, and the message.

Every file is written whole (a temporary file, then a rename), readable by the grader's group
(mode 0640), and the same rows give the same bytes: rows are sorted by student and by the
exercises' order in the book, points print with one format, and nothing depends on the clock.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pandas as pd

from ..files import write_atomic

LONG = ["student", "chapter", "exercise", "points", "max_points", "message"]
NOT_SUBMITTED = "not submitted"
MODE = 0o640  # the grader and its group read the gradebook; other users do not


def one_line(message: str) -> str:
    """A message as the gradebook keeps it: on one line, and without memory addresses (an
    object's repr, ``<Foo object at 0x7f...>``, differs from one run to the next)."""
    return re.sub(r"\b0x[0-9a-fA-F]{6,}\b", "0x...", " ".join(str(message).split()))


def wide(long: pd.DataFrame) -> pd.DataFrame:
    """One row per student: the points of each exercise, their total and the maximum."""
    order = list(dict.fromkeys(long.exercise))
    points = long.pivot(index="student", columns="exercise", values="points")[order]
    table = pd.DataFrame({"Student": points.index, "SIS Login ID": points.index, "Section": ""})
    table = pd.concat([table.reset_index(drop=True), points.reset_index(drop=True)], axis=1)
    maxima = long.drop_duplicates("exercise").set_index("exercise").max_points[order]
    table["Total"] = points.sum(axis=1).values
    table["Maximum"] = float(maxima.sum())
    return table


def summary(long: pd.DataFrame) -> pd.DataFrame:
    """Per exercise: how many students solved it, how many handed it in, of how many, and the
    most common message of those who handed it in and did not solve it (with how many got it;
    a tie goes to the first student in the gradebook's order)."""
    rows = []
    for (chapter, exercise), g in long.groupby(["chapter", "exercise"], sort=False):
        handed = g[g.message != NOT_SUBMITTED]
        failing = Counter(handed.loc[handed.points < handed.max_points, "message"])
        common, count = failing.most_common(1)[0] if failing else ("", 0)
        rows.append((chapter, exercise, int((g.points >= g.max_points).sum()), len(handed), len(g), common, count))
    return pd.DataFrame(rows, columns=["chapter", "exercise", "solved", "handed in", "students",
                                       "most common failure", "of"])


def feedback(long: pd.DataFrame, student: str, notes=()) -> str:
    """A student's feedback in Markdown: each chapter's exercises, points and messages, and the
    grader's notes on the files they handed in."""
    mine = long[long.student == student]
    lines = [f"# Feedback for {student}", "",
             f"Total: {_points(mine.points.sum())} of {_points(mine.max_points.sum())} points.", ""]
    for chapter, g in mine.groupby("chapter", sort=False):
        lines += [f"## {chapter}", "", "| exercise | points | message |", "|---|---|---|"]
        lines += [f"| {r.exercise} | {_points(r.points)} / {_points(r.max_points)} | {r.message.replace('|', '/')} |"
                  for r in g.itertuples()]
        lines.append("")
    if notes:
        lines += ["## About the files you handed in", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


def _points(x: float) -> str:
    return f"{x:g}"


def write(long: pd.DataFrame, out, notes: dict | None = None) -> list[Path]:
    """Write the gradebook (``out``, one row per student), the long table and the summary beside
    it, and a feedback file per student in ``feedback/`` beside it; returns the paths written.
    ``notes``: per student, sentences about the files they handed in (duplicates, files that are
    not a chapter), for their feedback."""
    out = Path(out)
    long = long[LONG].sort_values("student", kind="stable").reset_index(drop=True)
    long["message"] = long.message.map(one_line)
    stem = out.with_suffix("")
    written = [(out, wide(long)), (Path(f"{stem}_long.csv"), long), (Path(f"{stem}_summary.csv"), summary(long))]
    paths = [write_atomic(path, frame.to_csv(index=False, float_format="%g", lineterminator="\n"), MODE)
             for path, frame in written]
    folder = out.parent / "feedback"
    for student in long.student.unique():
        paths.append(write_atomic(folder / f"{student}.md", feedback(long, student, (notes or {}).get(student, ())),
                                  MODE))
    folder.chmod(0o750)
    return paths
