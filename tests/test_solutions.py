"""The reference solutions (commlab_instructor) against the book's exercises.

The exercises are found in the notebooks, not listed here: every code cell of notebooks/*.ipynb
that calls a check ``chNN.check_...(...)`` is one (commlab.classroom.edition.exercises). For each:
a solution exists, the check accepts it and refuses None ("not answered"), the cell code of
``solution_source`` passes the check when run on its own, and it assigns the variable the
notebook's cell passes to the check."""
import importlib
import re

import nbformat
import pytest

from commlab_instructor import SOLUTIONS, solution_source, variable
from commlab.classroom.edition import chapters, exercises


def _exercises() -> dict:
    """{(chapter, check): the name the cell passes to its check} of every exercise cell."""
    found = {}
    for path in chapters():
        nb = nbformat.read(path, as_version=4)
        for ex in exercises(nb):
            arg = ex.argument
            if arg == "None":  # "ch09.check_choco_step(None);  # replace None by step"
                defined = re.findall(r"^def (\w+)\(", nb.cells[ex.cell].source, re.M)
                arg = defined[0] if defined else None
            found[(ex.chapter, ex.check)] = arg
    return found


EXERCISES = _exercises()
CASES = sorted(EXERCISES)
IDS = [f"{c}-{k}" for c, k in CASES]


def _check(chapter: str, check: str):
    return getattr(importlib.import_module(f"commlab.chapters.exercises.{chapter}"), check)


def test_the_notebooks_have_exercises_and_every_solution_has_one():
    assert len(EXERCISES) >= 13
    orphans = [(c, k) for c, checks in SOLUTIONS.items() for k in checks if (c, k) not in EXERCISES]
    assert orphans == []


@pytest.mark.parametrize("chapter,check", CASES, ids=IDS)
def test_solution_passes_its_check(chapter, check, capsys):
    assert check in SOLUTIONS.get(chapter, {}), f"no solution for {chapter}.{check}"
    fn = _check(chapter, check)
    assert fn(None) is False
    assert "not answered" in " ".join(capsys.readouterr().out.split())
    assert fn(SOLUTIONS[chapter][check]()) is True, capsys.readouterr().out
    assert "correct" in capsys.readouterr().out


@pytest.mark.parametrize("chapter,check", CASES, ids=IDS)
def test_cell_code_passes_its_check(chapter, check, capsys):
    assert check in SOLUTIONS.get(chapter, {}), f"no solution for {chapter}.{check}"
    name = variable(chapter, check)
    assert name == EXERCISES[(chapter, check)], "the solution assigns another variable than the notebook's cell"
    code = solution_source(chapter, check)
    namespace = {"__name__": "__cell__"}
    exec(compile(code, f"<{chapter}.{check}>", "exec"), namespace)
    assert _check(chapter, check)(namespace[name]) is True, code + capsys.readouterr().out


def test_the_solutions_are_not_in_the_package_students_install():
    """pyproject.toml's package list leaves commlab_instructor out of every wheel of commlab."""
    import tomllib
    from pathlib import Path

    import setuptools

    root = Path(__file__).resolve().parent.parent
    find = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = setuptools.find_packages(where=str(root), include=find["include"])
    assert "commlab.classroom" in packages and "commlab.chapters.exercises" in packages
    assert not [p for p in packages if "instructor" in p or "solutions" in p]

