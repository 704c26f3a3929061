"""commlab.classroom.edition: the student edition of every chapter keeps every exercise of the
book and changes nothing else (cells, sources, metadata but otter's), its exercise cells run with
the answers empty and their checks say "not answered", it holds no reference solution, and its
autograder has one hidden test per exercise, calling the exercise's check.

Executing a whole student edition: its code cells are the book's, in the book's order (the test
below), so nbval's run of notebooks/ executes them and compares their checked outputs; the
grading test (tests/test_grade.py) executes chapter 01's student edition, untouched, in otter."""
import contextlib
import io
import json
import zipfile

import nbformat
import pytest

from commlab_instructor import solution_source
from commlab.classroom.edition import BOOK, assign, chapters, exercises, master

BOOK_NOTEBOOKS = chapters()


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    root = tmp_path_factory.mktemp("edition")
    written = assign(BOOK_NOTEBOOKS, root / "student", 45, root / "autograders")
    return root, written


def test_every_chapter_has_a_student_edition(edition):
    root, written = edition
    assert [p.name for p in written] == [p.name for p in BOOK_NOTEBOOKS] and len(written) == 13
    assert sorted(p.name for p in (root / "student").iterdir()) == [p.name for p in BOOK_NOTEBOOKS]


@pytest.mark.parametrize("book", BOOK_NOTEBOOKS, ids=lambda p: p.stem)
def test_student_edition_keeps_every_exercise_and_changes_nothing_else(edition, book):
    root, _ = edition
    ours = nbformat.read(book, as_version=4)
    theirs = nbformat.read(root / "student" / book.name, as_version=4)
    assert {k: v for k, v in theirs.metadata.items() if k != "otter"} == ours.metadata
    assert theirs.metadata["otter"]["assignment_name"] == book.stem
    assert len(theirs.cells) == len(ours.cells)
    by_cell = {ex.cell: ex for ex in exercises(ours)}
    assert len(by_cell) >= 3
    for i, (a, b) in enumerate(zip(ours.cells, theirs.cells)):
        assert (b.cell_type, b.source) == (a.cell_type, a.source), f"cell {i} changed"
        if b.cell_type == "code":
            assert b.outputs == [] and b.execution_count is None
        extra = {k: v for k, v in b.metadata.items() if a.metadata.get(k) != v}
        if i in by_cell:  # otter's tag and the test it places after this cell when grading
            assert extra == {"otter": {"tests": [by_cell[i].name]}, "tags": ["otter_answer_cell"]}
        else:
            assert extra == {} and set(a.metadata) == set(b.metadata), f"cell {i}'s metadata changed"


@pytest.mark.parametrize("book", BOOK_NOTEBOOKS, ids=lambda p: p.stem)
def test_exercise_cells_run_with_the_answers_empty_and_say_not_answered(edition, book):
    root, _ = edition
    nb = nbformat.read(root / "student" / book.name, as_version=4)
    namespace = {"__name__": "__main__"}
    for ex in exercises(nb):  # in order, in one namespace, as the notebook runs them
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            exec(compile(nb.cells[ex.cell].source, f"<{ex.name}>", "exec"), namespace)
        assert "not answered" in " ".join(said.getvalue().split()), f"{ex.name}: {said.getvalue()!r}"


@pytest.mark.parametrize("book", BOOK_NOTEBOOKS, ids=lambda p: p.stem)
def test_no_reference_solution_reaches_the_student(edition, book):
    root, _ = edition
    text = (root / "student" / book.name).read_text()
    for ex in exercises(nbformat.read(book, as_version=4)):
        answer = solution_source(ex.chapter, ex.check).strip().splitlines()[-1]  # "answer1 = f / (M * I)"
        assert json.dumps(answer)[1:-1] not in text, f"{ex.name}'s solution is in the student edition"


@pytest.mark.parametrize("book", BOOK_NOTEBOOKS, ids=lambda p: p.stem)
def test_autograder_has_one_hidden_test_per_exercise_calling_its_check(edition, book):
    root, _ = edition
    with zipfile.ZipFile(root / "autograders" / f"{book.stem}-autograder.zip") as z:
        tests = {n[len("tests/"):-3]: z.read(n).decode() for n in z.namelist() if n.startswith("tests/")}
        config = json.loads(z.read("otter_config.json"))
    found = exercises(nbformat.read(book, as_version=4))
    assert sorted(tests) == sorted(ex.name for ex in found)
    for ex in found:
        assert f"verdict(env, {ex.chapter!r}, {ex.check!r}, {ex.variable!r})" in tests[ex.name]
        assert "hidden=True" in tests[ex.name]
    assert config["assignment_name"] == book.stem
    assert config["plugins"] == [{"commlab.classroom.limits.ExerciseTimeLimit": {
        "seconds": 45.0, "variables": {ex.name: ex.variable for ex in found}}}]


def test_master_wraps_each_exercise_in_a_question_with_its_solution():
    book = nbformat.read(BOOK / "01_why_communication.ipynb", as_version=4)
    m = master(book, "01_why_communication", 30)
    raw = [c.source.splitlines()[0] for c in m.cells if c.cell_type == "raw"]
    assert raw[0] == "# ASSIGNMENT CONFIG" and raw.count("# BEGIN QUESTION") == 3 and raw.count("# END QUESTION") == 3
    answers = [c.source for c in m.cells if "# BEGIN PROMPT" in c.source]
    assert len(answers) == 3 and "answer1 = None  # your C2C ratio" in answers[0]
    assert solution_source("ch01", "check_c2c_ratio") in answers[0]
    assert len(m.cells) == len(book.cells) + 1 + 3 * 7


def test_exercises_name_the_variable_and_the_argument():
    found = exercises(nbformat.read(BOOK / "09_decentralized.ipynb", as_version=4))
    step = [ex for ex in found if ex.check == "check_choco_step"][0]
    assert (step.variable, step.argument, step.name) == ("step", "None", "ch09_choco_step")


def test_chapters_take_numbers_and_name_the_valid_ones():
    assert [p.name[:2] for p in chapters("1, 06,01")] == ["01", "06"]
    with pytest.raises(ValueError, match=r"no chapter 13; valid: 00, 01, .*, 12"):
        chapters("01,13")
    with pytest.raises(ValueError, match="none given"):
        chapters(",")
