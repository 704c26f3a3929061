"""commlab.classroom.gradebook: the long table becomes one row per student (with total and
maximum), the summary and a feedback file per student, group-readable, the same bytes for the same
rows (exercises in the order grading gives them, the book's), and no message keeps a memory address."""
import os
import stat

import pandas as pd

from commlab.classroom.gradebook import LONG, one_line, summary, wide, write

ROWS = [("bob", "01_why", "ch01_a", 0.0, 1.0, "a: not answered yet."),
        ("bob", "01_why", "ch01_b", 1.0, 1.0, "correct"),
        ("ada", "01_why", "ch01_a", 1.0, 1.0, "correct"),
        ("ada", "01_why", "ch01_b", 1.0, 1.0, "correct"),
        ("cy", "01_why", "ch01_a", 0.0, 1.0, "not submitted"),
        ("cy", "01_why", "ch01_b", 0.0, 1.0, "not submitted")]


def _long():
    return pd.DataFrame(ROWS, columns=LONG)


def test_one_row_per_student_with_total_and_maximum():
    table = wide(_long())
    assert list(table.columns) == ["Student", "SIS Login ID", "Section", "ch01_a", "ch01_b", "Total", "Maximum"]
    assert table.values.tolist() == [["ada", "ada", "", 1.0, 1.0, 2.0, 2.0], ["bob", "bob", "", 0.0, 1.0, 1.0, 2.0],
                                     ["cy", "cy", "", 0.0, 0.0, 0.0, 2.0]]


def test_the_summary_counts_hand_ins_apart():
    assert summary(_long()).values.tolist() == [["01_why", "ch01_a", 1, 2, 3, "a: not answered yet.", 1],
                                                ["01_why", "ch01_b", 2, 2, 3, "", 0]]


def test_messages_lose_addresses_and_line_breaks():
    assert one_line("got <Foo object at 0x7f3a2b1c9d80>\n  and more") == "got <Foo object at 0x...> and more"
    assert one_line("0x10 is a small number") == "0x10 is a small number"


def test_the_files_are_written_group_readable_and_the_same_twice(tmp_path):
    paths = write(_long(), tmp_path / "grades" / "gradebook.csv", {"bob": ["notes.ipynb was not graded"]})
    names = sorted(str(p.relative_to(tmp_path / "grades")) for p in paths)
    assert names == ["feedback/ada.md", "feedback/bob.md", "feedback/cy.md", "gradebook.csv",
                     "gradebook_long.csv", "gradebook_summary.csv"]
    assert {stat.S_IMODE(os.stat(p).st_mode) for p in paths} == {0o640}
    assert stat.S_IMODE(os.stat(tmp_path / "grades" / "feedback").st_mode) == 0o750
    first = {p: p.read_bytes() for p in paths}
    students_reversed = pd.concat([g for _, g in reversed(list(_long().groupby("student", sort=False)))])
    write(students_reversed, tmp_path / "grades" / "gradebook.csv", {"bob": ["notes.ipynb was not graded"]})
    assert {p: p.read_bytes() for p in paths} == first
    assert (tmp_path / "grades" / "gradebook.csv").read_text().splitlines()[:2] == [
        "Student,SIS Login ID,Section,ch01_a,ch01_b,Total,Maximum", "ada,ada,,1,1,2,2"]
    bob = (tmp_path / "grades" / "feedback" / "bob.md").read_text()
    assert "Total: 1 of 2 points." in bob and "| ch01_a | 0 / 1 | a: not answered yet. |" in bob
    assert "- notes.ipynb was not graded" in bob
