"""The layers of docs/architecture.md, enforced by import-linter (the contracts are in
pyproject.toml): imports only point down, no circle of imports inside a package, exercises
never import figure code. Each contract is also shown to fail on a copy of the package with one bad
import added, so a future import that points up cannot pass CI."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"]


def lint(cwd: pathlib.Path) -> subprocess.CompletedProcess:
    # cwd first, so that the copy under test is the commlab that is linted; then whatever the caller's
    # path adds (a machine where import-linter itself comes through PYTHONPATH)
    path = os.pathsep.join([str(cwd)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    env = {"PYTHONPATH": path, "PATH": "/usr/bin:/bin"}
    return subprocess.run(LINT + ["--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_every_contract_is_kept():
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def _copy_with(tmp_path, module: str, line: str) -> pathlib.Path:
    shutil.copytree(ROOT / "commlab", tmp_path / "commlab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "commlab" / module
    path.write_text(path.read_text() + f"\n{line}\n")
    return tmp_path


@pytest.mark.parametrize("module,line,broken", [
    ("net/cost.py", "from ..arch import ring  # up from the ground floor", "Layers of docs/architecture.md"),
    ("compress/qsgd.py", "from ..arch.collectives import allreduce  # a compressor talking to Comm",
     "Layers of docs/architecture.md"),
    ("classroom/grade.py", "from ..cli import main  # the library calling up to the command line",
     "Layers of docs/architecture.md"),
    ("arch/ring.py", "from . import collectives  # collectives imports ring", "No circle of imports"),
    ("chapters/exercises/ch02.py", "from ..ch02 import allreduce_time  # figure code", "Exercises never import"),
])
def test_a_bad_import_breaks_a_contract(tmp_path, module, line, broken):
    out = lint(_copy_with(tmp_path, module, line))
    assert out.returncode != 0
    assert f"{broken}" in out.stdout and "BROKEN" in out.stdout, out.stdout
