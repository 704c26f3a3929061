"""The student edition and the autograder of a chapter, made by otter-grader's ``otter assign``
from the book's notebook, which stays the source.

An **exercise** is a code cell of a chapter notebook that calls one of the chapter's checks,
``chNN.check_<name>(<variable>)``; its reference solution is in :mod:`commlab_instructor`
(beside the package in the repository, not installed with it). :func:`master` rewrites a chapter
notebook in otter's assignment format: each exercise cell becomes a question of 1 point whose answer cell shows the
book's cell to the student (an otter *prompt*) and holds the reference solution in the
instructor's copy (an otter *solution block*), and whose hidden test calls
:func:`commlab.classroom.limits.verdict`, i.e. the same check the cell calls. Every other cell is
copied as it is. :func:`assign` runs ``otter assign`` on it: the student notebook (outputs
cleared) and the autograder zip that ``otter run`` grades with.

So the student edition differs from the book only in metadata: otter's assignment name on the
notebook and, on each exercise cell, otter's tag and the name of its test (which places the check
at that cell while grading, so two exercises may reuse one variable name, as chapter 06's do).
"""
from __future__ import annotations

import importlib
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

import commlab
BOOK = Path(commlab.__file__).resolve().parent.parent / "notebooks"
INSTRUCTOR = BOOK.parent / "commlab_instructor"  # the reference solutions: in the repository, not the package


def solutions():
    """The reference solutions' module, ``commlab_instructor`` (found beside the package in a
    clone of the repository; a wheel does not install it)."""
    try:
        return importlib.import_module("commlab_instructor")
    except ImportError:
        if not (INSTRUCTOR / "__init__.py").exists():
            raise FileNotFoundError(f"no reference solutions in {INSTRUCTOR}: they are not installed with commlab; "
                                    "the classroom works from a clone of the book's repository") from None
        sys.path.insert(0, str(INSTRUCTOR.parent))
        return importlib.import_module("commlab_instructor")
CALL = re.compile(r"\b(ch\d\d)\.(check_\w+)\(\s*(\w*)")

CONFIG = """# ASSIGNMENT CONFIG
name: {name}
run_tests: false
init_cell: false
check_all_cell: false
export_cell: false
solutions_pdf: false
tests:
  ok_format: false
  files: false
generate:
  pdf: false
  plugins:
    - commlab.classroom.limits.ExerciseTimeLimit:
        seconds: {seconds}
        variables: {variables}
"""

TEST = '''""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
def test_{name}(env):
    from commlab.classroom.limits import verdict
    verdict(env, {chapter!r}, {check!r}, {variable!r})
'''


@dataclass(frozen=True)
class Exercise:
    """One exercise cell: the chapter's check module (``ch01``), the check, the variable the
    cell assigns, what the cell passes to the check, and the cell's index in the notebook."""
    chapter: str
    check: str
    variable: str
    argument: str
    cell: int

    @property
    def name(self) -> str:
        """The question's name in otter and the gradebook: ``ch01_c2c_ratio``."""
        return f"{self.chapter}_{self.check[len('check_'):]}"


def chapters(spec: str | None = None) -> list[Path]:
    """The book's chapter notebooks: all of them, or those ``spec`` names ("01,06" or "1,6")."""
    found = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
    if not found:
        raise FileNotFoundError(f"no chapter notebooks in {BOOK}: the classroom works from a clone of the "
                                "book's repository (pip install -e .)")
    if spec is None:
        return found
    by_number = {p.name[:2]: p for p in found}
    wanted = [w.strip().zfill(2) for w in str(spec).split(",") if w.strip()]
    bad = [w for w in wanted if w not in by_number]
    if bad or not wanted:
        raise ValueError(f"chapters {spec!r}: no chapter {', '.join(bad) or '(none given)'}; "
                         f"valid: {', '.join(by_number)}")
    return [by_number[w] for w in dict.fromkeys(wanted)]


def exercises(nb) -> list[Exercise]:
    """The exercise cells of a chapter notebook, in order."""
    found = []
    for i, cell in enumerate(nb.cells):
        calls = CALL.findall(cell.source) if cell.cell_type == "code" else []
        if len(calls) > 1:
            raise ValueError(f"cell {i} calls {len(calls)} checks; an exercise cell calls one")
        if calls:
            chapter, check, argument = calls[0]
            found.append(Exercise(chapter, check, solutions().variable(chapter, check), argument, i))
    return found


def _answer_cell(source: str, ex: Exercise) -> str:
    """The book's cell as the student's prompt; the reference solution as the instructor's."""
    worked = solutions().solution_source(ex.chapter, ex.check)
    solution = f"from commlab.chapters.exercises import {ex.chapter}\n{worked}{ex.chapter}.{ex.check}({ex.variable});"
    return f'""" # BEGIN PROMPT\n{source.rstrip()}\n"""  # END PROMPT\n' \
           f"# BEGIN SOLUTION NO PROMPT\n{solution}\n# END SOLUTION"


def master(nb, name: str, seconds: float = 60):
    """The notebook in otter's assignment format, named ``name``; an exercise's cells (its answer
    and its check) may run ``seconds`` each when graded."""
    raw, code = nbformat.v4.new_raw_cell, nbformat.v4.new_code_cell
    by_cell = {ex.cell: ex for ex in exercises(nb)}
    variables = "{" + ", ".join(f"{ex.name}: {ex.variable}" for ex in by_cell.values()) + "}"
    cells = [raw(CONFIG.format(name=name, seconds=float(seconds), variables=variables))]
    for i, cell in enumerate(nb.cells):
        ex = by_cell.get(i)
        if ex is None:
            cells.append(cell)
            continue
        cells += [raw(f"# BEGIN QUESTION\nname: {ex.name}\npoints: 1\ncheck_cell: false"),
                  raw("# BEGIN SOLUTION"), code(_answer_cell(cell.source, ex)), raw("# END SOLUTION"),
                  raw("# BEGIN TESTS"),
                  code(TEST.format(name=ex.name, chapter=ex.chapter, check=ex.check, variable=ex.variable)),
                  raw("# END TESTS"), raw("# END QUESTION")]
    out = nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)
    out.nbformat_minor = nb.nbformat_minor
    return out


def assign(notebooks: list[Path], out: Path, seconds: float = 60, autograders: Path | None = None) -> list[Path]:
    """Run ``otter assign`` on each chapter: its student notebook goes to ``out`` (outputs
    cleared), its autograder to ``autograders`` as ``<chapter>-autograder.zip`` if given. Nothing
    is written until every chapter is made. Returns the student notebooks' paths."""
    from otter.assign import main as otter_assign  # otter takes seconds to import: only when used

    made = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in notebooks:
            work = Path(tmp) / path.stem
            work.mkdir()
            nbformat.write(master(nbformat.read(path, as_version=4), path.stem, seconds), work / path.name)
            otter_assign(str(work / path.name), str(work / "dist"), no_pdfs=True, no_run_tests=True)
            student = nbformat.read(work / "dist" / "student" / path.name, as_version=4)
            for cell in student.cells:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
            made[path] = (student, next((work / "dist" / "autograder").glob("*.zip")))
        Path(out).mkdir(parents=True, exist_ok=True)
        for path, (student, zipped) in made.items():
            nbformat.write(student, Path(out) / path.name)
            if autograders is not None:
                Path(autograders).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(zipped, Path(autograders) / f"{path.stem}-autograder.zip")
    return [Path(out) / path.name for path in made]
