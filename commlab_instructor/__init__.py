"""Reference solutions of the book's exercises, for instructors: kept out of the student edition
and out of the installed package.

This folder sits beside ``commlab/`` in the repository and is not part of the package that
``pip install`` builds (pyproject.toml installs ``commlab`` and its subpackages only), so a
student who installs commlab from a wheel does not get it. The classroom commands, which work
from a clone of the repository, find it there (:func:`commlab.classroom.edition.solutions`). The
repository is public: a student with a clone has these files too, and the guide says so.

One module per chapter (``ch00`` ... ``ch12``) holds one function per exercise, named like the
exercise's check function without ``check_`` (``local_sgd_bytes`` for
``ch05.check_local_sgd_bytes``). A function takes no arguments and returns what the student
assigns in the exercise's cell: a number, a list, or the function the student writes. Its body
is the worked solution, from the chapter's formulas and the library's public API; it never
reads the value a check expects. Each module's ``VARIABLES`` names the variable the notebook's
cell assigns (``answer``, ``answer1``, ``my_average``, ...).

:data:`SOLUTIONS` maps chapter and check name to the solution; :func:`solution_source` gives the
code a notebook cell would hold: the function's body, ending by assigning the cell's variable.

``tests/test_solutions.py`` finds every exercise cell in ``notebooks/*.ipynb`` and checks that it
has a solution here, that the check accepts the solution and refuses ``None``, and that the cell
code of :func:`solution_source`, run on its own, passes the check too.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import textwrap

CHAPTERS = tuple(f"ch{i:02d}" for i in range(13))


def _chapter_solutions(chapter: str) -> dict:
    module = importlib.import_module(f"{__name__}.{chapter}")
    return {f"check_{name}": getattr(module, name) for name in (c[len("check_"):] for c in module.VARIABLES)}


SOLUTIONS = {chapter: _chapter_solutions(chapter) for chapter in CHAPTERS}


def variable(chapter: str, check_name: str) -> str:
    """The name the exercise's notebook cell assigns (``answer``, ``my_topk``, ...)."""
    return importlib.import_module(f"{__name__}.{chapter}").VARIABLES[check_name]


def solution_source(chapter: str, check_name: str) -> str:
    """The cell code of a solution: its function's body (imports included), the final
    ``return value`` turned into ``variable = value``, or dropped when it returns the variable."""
    fn = SOLUTIONS[chapter][check_name]
    source = textwrap.dedent(inspect.getsource(fn))
    body = ast.parse(source).body[0].body
    if ast.get_docstring(ast.parse(source).body[0]) is not None:
        body = body[1:]
    last = body[-1]
    if not isinstance(last, ast.Return):
        raise ValueError(f"{chapter}.{fn.__name__} must end with a return")
    lines = source.splitlines()
    code = textwrap.dedent("\n".join(lines[body[0].lineno - 1:last.lineno - 1])) if len(body) > 1 else ""
    name, value = variable(chapter, check_name), ast.get_source_segment(source, last.value)
    if value != name:
        code = f"{code.rstrip()}\n{name} = {value}" if code.strip() else f"{name} = {value}"
    return code.strip() + "\n"
