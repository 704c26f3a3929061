"""commlab.classroom.grade, through ``python -m commlab classroom``: five made-up submissions of
chapter 01 (every reference solution; the student edition untouched; a wrong answer, a raising
answer and an infinite loop; the book's notebook instead of the handout; an answer cell deleted)
and a student who handed in nothing give exactly the gradebook, summary and feedback below, the
same bytes again on --resume without grading anything again; which notebook and which cell is
graded follows the stated rules; a notebook past its limit is killed with its kernel; bad folders
are refused."""
import os
import uuid

import nbformat
import pandas as pd
import pytest

from commlab_instructor import solution_source
from commlab.classroom.edition import exercises
from commlab.classroom.edition import BOOK
from commlab.classroom.grade import as_handout, grade, handed_in
from commlab.cli import main
from leftovers import tagged

NB = "01_why_communication.ipynb"
NOT_ANSWERED = ["C2C ratio of BERT-Large: not answered yet. f(N) = 2(N-1)/N for a ring.",
                "ResNet-50 speedup at 16 workers: not answered yet. t_s = B C / F; t_m = 2(N-1) alpha + 2(N-1)/N 4D beta.",
                "largest N at 50% efficiency: not answered yet."]
EXPECTED = [
    ("ada", "correct"), ("ada", "correct"), ("ada", "correct"),
    *[("bob", m) for m in NOT_ANSWERED],
    ("cy", "C2C ratio of BERT-Large: not yet: 0.5 is not within 2% of the expected value. f(N) = 2(N-1)/N for a ring."),
    ("cy", "the answer cell raised ZeroDivisionError: division by zero"),
    ("cy", "the answer cell was stopped after 10 s, the time limit of an exercise's cell"),
    *[("dee", "not submitted")] * 3,
    ("eve", "correct"), *[("eve", m) for m in NOT_ANSWERED[1:]],
    ("fay", "correct"), ("fay", "the answer cell is missing: no cell calls ch01.check_speedup(answer2)"),
    ("fay", "correct"),
]
EXERCISES = ["ch01_c2c_ratio", "ch01_speedup", "ch01_max_workers"]


def _hand_in(student_nb, folder, who, answers):
    nb = nbformat.read(student_nb, as_version=4)
    for ex, source in zip(exercises(nb), answers):
        if source is not None:
            nb.cells[ex.cell].source = f"from commlab.chapters.exercises import ch01\n{source}ch01.check_{ex.name[5:]}({ex.variable});"
    (folder / who).mkdir(parents=True)
    nbformat.write(nb, folder / who / NB)


@pytest.mark.timeout(900)
def test_five_submissions_give_exactly_this_gradebook(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the guide's commands take folders relative to where they run
    assert main(["classroom", "student", "--out", "handout", "--chapters", "01"]) == 0
    handout = tmp_path / "handout" / NB
    found = exercises(nbformat.read(handout, as_version=4))
    solutions = [solution_source("ch01", ex.check) for ex in found]
    _hand_in(handout, tmp_path / "class", "ada", solutions)
    _hand_in(handout, tmp_path / "class", "bob", [None, None, None])
    _hand_in(handout, tmp_path / "class", "cy", ["answer1 = 0.5\n", "answer2 = 1 / 0\n", "while True:\n    pass\n"])
    (tmp_path / "class" / "dee").mkdir()
    _hand_in(BOOK / NB, tmp_path / "class", "eve", [solutions[0], None, None])  # the book's notebook
    _hand_in(handout, tmp_path / "class", "fay", solutions)
    fay = nbformat.read(tmp_path / "class" / "fay" / NB, as_version=4)
    del fay.cells[found[1].cell]  # exercise 2's cell deleted: exercise 3 is still graded on its own
    nbformat.write(fay, tmp_path / "class" / "fay" / NB)
    (tmp_path / "class" / "fay" / "scratch.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    capsys.readouterr()
    args = ["classroom", "grade", "class", "--out", "grades/gradebook.csv", "--exercise-limit", "10", "--jobs", "2"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "grading 5 notebook(s) of 6 student(s)" in printed and "[5/5]" in printed
    assert "fay: scratch.ipynb was not graded: it is not a notebook of the chapters graded" in printed
    book = pd.read_csv(tmp_path / "grades" / "gradebook_long.csv", keep_default_na=False)
    assert list(book.columns) == ["student", "chapter", "exercise", "points", "max_points", "message"]
    assert list(book.chapter.unique()) == ["01_why_communication"]
    assert list(book.exercise) == EXERCISES * 6
    assert list(book.points) == [1.0] * 3 + [0.0] * 9 + [1.0, 0, 0, 1.0, 0, 1.0]
    assert set(book.max_points) == {1.0}
    assert list(zip(book.student, book.message)) == EXPECTED
    per_student = pd.read_csv(tmp_path / "grades" / "gradebook.csv", keep_default_na=False)
    assert per_student[["Student", "Total", "Maximum"]].values.tolist() == [
        ["ada", 3, 3], ["bob", 0, 3], ["cy", 0, 3], ["dee", 0, 3], ["eve", 1, 3], ["fay", 2, 3]]
    summary = pd.read_csv(tmp_path / "grades" / "gradebook_summary.csv", keep_default_na=False)
    assert list(summary.columns) == ["chapter", "exercise", "solved", "handed in", "students", "most common failure", "of"]
    assert summary.values.tolist() == [
        ["01_why_communication", EXERCISES[0], 3, 5, 6, NOT_ANSWERED[0], 1],
        ["01_why_communication", EXERCISES[1], 1, 5, 6, NOT_ANSWERED[1], 2],
        ["01_why_communication", EXERCISES[2], 2, 5, 6, NOT_ANSWERED[2], 2]]
    assert sorted(os.listdir(tmp_path / "grades")) == ["feedback", "gradebook.csv", "gradebook_journal",
                                                       "gradebook_long.csv", "gradebook_summary.csv"]
    feedback = (tmp_path / "grades" / "feedback" / "fay.md").read_text()
    assert "Total: 2 of 3 points." in feedback and "- scratch.ipynb was not graded" in feedback
    assert "most common failure" in printed

    files = sorted((tmp_path / "grades").rglob("*.*"))
    before = {f: f.read_bytes() for f in files}
    assert main(args + ["--resume"]) == 0  # nothing changed: nothing is graded again, the same bytes
    assert "grading 0 notebook(s) of 6 student(s); 5 kept from" in capsys.readouterr().out
    assert {f: f.read_bytes() for f in sorted((tmp_path / "grades").rglob("*.*"))} == before


def _notebook(tmp_path, name, nb):
    path = tmp_path / name
    path.write_text(nbformat.writes(nb))
    return path


def test_which_notebooks_are_graded_follows_the_rules(tmp_path):
    from commlab.classroom.edition import chapters

    known = {p.stem: p for p in chapters("01,06")}
    handout = nbformat.read(BOOK / NB, as_version=4)
    handout.metadata["otter"] = {"assignment_name": "06_quantization"}  # renamed, but chapter 06's
    student = tmp_path / "sam"
    student.mkdir()
    _notebook(student, "my_work.ipynb", handout)
    _notebook(student, NB, nbformat.read(BOOK / NB, as_version=4))
    _notebook(student, "01_why_communication-Copy1.ipynb", nbformat.read(BOOK / NB, as_version=4))
    _notebook(student, "notes.ipynb", nbformat.v4.new_notebook())
    found, notes = handed_in(student, known)
    assert sorted(found) == ["01_why_communication", "06_quantization"]
    assert found["01_why_communication"] == ("not graded: 2 notebooks of this chapter were handed in "
                                             f"({NB.replace('.ipynb', '-Copy1.ipynb')}, {NB}); keep one")
    assert found["06_quantization"][0].name == "my_work.ipynb"
    assert notes[0].startswith("notes.ipynb was not graded: it is not a notebook of the chapters graded")
    assert "neither was graded" in notes[1]
    (student / "01_why_communication-Copy1.ipynb").unlink()
    (student / NB).write_text("{ not json")
    found, _ = handed_in(student, known)
    assert found["01_why_communication"].startswith(f"not graded: {NB} is not a notebook (NotJSONError: ")


def test_the_answer_cell_is_the_last_that_calls_its_check():
    nb = nbformat.read(BOOK / NB, as_version=4)
    found = exercises(nb)
    first, second, third = (nb.cells[ex.cell] for ex in found)
    nb.cells = [c for c in nb.cells if c is not second] + [nbformat.from_dict(dict(third))]  # a copy of the third
    nb.cells[found[0].cell], nb.cells[0] = nb.cells[0], first  # the first moved to the top
    marked, marks, said = as_handout(nb, "01_why_communication", found)
    assert {i: ex.name for i, ex in marks.items()} == {0: "ch01_c2c_ratio", len(marked.cells) - 1: "ch01_max_workers"}
    assert marked.metadata["otter"]["assignment_name"] == "01_why_communication"
    assert said == {"ch01_speedup": ("the answer cell is missing: no cell calls ch01.check_speedup(answer2)", True),
                    "ch01_max_workers": ("(2 cells call ch01.check_max_workers; the last one was graded)", False)}


@pytest.mark.timeout(300)
def test_a_notebook_past_its_limit_is_killed_with_its_kernel(tmp_path, monkeypatch):
    tag = uuid.uuid4().hex
    monkeypatch.setenv("COMMLAB_GRADE_TEST", tag)  # inherited by the runner and the kernel it starts
    main(["classroom", "student", "--out", str(tmp_path / "handout"), "--chapters", "01"])
    # a loop the exercise limit would allow for minutes: only the notebook's limit can stop it, on any machine
    _hand_in(tmp_path / "handout" / NB, tmp_path / "class", "eve", [None, None, "while True:\n    pass\n"])
    book = grade(tmp_path / "class", "01", exercise_limit=600, notebook_limit=15)
    assert list(book.points) == [0.0] * 3
    assert set(book.message) == {"not graded: the notebook ran past its time limit of 15 s and was stopped before "
                                 "this exercise's answer was collected"}
    assert tagged("COMMLAB_GRADE_TEST", tag) == []


def test_bad_folders_are_refused_with_the_reason(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a folder of student folders"):
        grade(tmp_path / "missing")
    with pytest.raises(ValueError, match="holds no student folders"):
        grade(tmp_path)
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "notes.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    with pytest.raises(ValueError, match=r"no notebook in .* is a chapter \(00_getting_started, "):
        grade(tmp_path)
    with pytest.raises(ValueError, match="jobs must be > 0, got 0"):
        grade(tmp_path, jobs=0)
