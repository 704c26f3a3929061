"""commlab.classroom.grade, through ``python -m commlab classroom``: three made-up submissions of
chapter 01 (every reference solution; the student edition untouched; a wrong answer, a raising
answer and an infinite loop) and a student who handed in nothing give exactly the gradebook and
summary below; a notebook past its limit is killed with its kernel; bad folders are refused."""
import os
import uuid

import nbformat
import pandas as pd
import psutil
import pytest

from commlab.chapters.exercises.solutions import solution_source
from commlab.classroom.edition import exercises
from commlab.classroom.grade import _message, grade
from commlab.cli import main

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
def test_three_submissions_give_exactly_this_gradebook(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the guide's commands take folders relative to where they run
    assert main(["classroom", "student", "--out", "handout", "--chapters", "01"]) == 0
    handout = tmp_path / "handout" / NB
    found = exercises(nbformat.read(handout, as_version=4))
    _hand_in(handout, tmp_path / "class", "ada", [solution_source("ch01", ex.check) for ex in found])
    _hand_in(handout, tmp_path / "class", "bob", [None, None, None])
    _hand_in(handout, tmp_path / "class", "cy", ["answer1 = 0.5\n", "answer2 = 1 / 0\n", "while True:\n    pass\n"])
    (tmp_path / "class" / "dee").mkdir()
    capsys.readouterr()
    out = tmp_path / "grades" / "gradebook.csv"
    assert main(["classroom", "grade", "class", "--out", "grades/gradebook.csv", "--exercise-limit", "10",
                 "--jobs", "2"]) == 0
    book = pd.read_csv(out, keep_default_na=False)
    assert list(book.columns) == ["student", "chapter", "exercise", "points", "message"]
    assert list(book.chapter.unique()) == ["01_why_communication"]
    assert list(book.exercise) == EXERCISES * 4
    assert list(book.points) == [1.0] * 3 + [0.0] * 9
    assert list(zip(book.student, book.message)) == EXPECTED
    summary = pd.read_csv(tmp_path / "grades" / "gradebook_summary.csv", keep_default_na=False)
    # dee handed nothing in; each failing message is one student's, and a tie goes to the first (bob)
    assert list(summary.columns) == ["chapter", "exercise", "solved", "handed in", "students", "most common failure", "of"]
    assert summary.values.tolist() == [["01_why_communication", name, 1, 3, 4, NOT_ANSWERED[i], 1]
                                       for i, name in enumerate(EXERCISES)]
    assert sorted(os.listdir(tmp_path / "grades")) == ["gradebook.csv", "gradebook_summary.csv"]
    printed = capsys.readouterr().out
    assert "graded 4 student(s)" in printed and "most common failure" in printed


@pytest.mark.timeout(300)
def test_a_notebook_past_its_limit_is_killed_with_its_kernel(tmp_path, monkeypatch):
    tag = uuid.uuid4().hex
    monkeypatch.setenv("COMMLAB_GRADE_TEST", tag)  # inherited by otter and the kernel it starts
    main(["classroom", "student", "--out", str(tmp_path / "handout"), "--chapters", "01"])
    # a loop the exercise limit would allow for minutes: only the notebook's limit can stop it, on any machine
    _hand_in(tmp_path / "handout" / NB, tmp_path / "class", "eve", [None, None, "while True:\n    pass\n"])
    book = grade(tmp_path / "class", "01", exercise_limit=600, notebook_limit=15)
    assert list(book.points) == [0.0] * 3
    assert set(book.message) == {"not graded: the notebook ran past its time limit of 15 s and was stopped"}

    def ours(p):
        try:
            return p.environ().get("COMMLAB_GRADE_TEST") == tag
        except (psutil.Error, OSError):
            return False
    assert [p.cmdline() for p in psutil.process_iter() if ours(p)] == []


def test_message_is_the_checks_own():
    output = ("ch01_speedup results:\n    ch01_speedup - 1 result:\n        ❌ Test case failed\n"
              "        Error at line 6 in test ch01_speedup:\n              verdict(env, 'ch01', 'check_speedup', 'answer2')\n"
              "        NotSolved: the answer cell raised ZeroDivisionError: division by zero")
    assert _message(output) == "the answer cell raised ZeroDivisionError: division by zero"
    assert _message("x\n  NameError: name 'y' is not defined") == "NameError: name 'y' is not defined"


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
