"""A classroom's grading, tried as an instructor would: made-up submissions of chapters 01 and 06
graded with the guide's commands, twice, and the two runs' files compared byte for byte.

    python benchmarks/classroom_trial.py --students 20 --jobs 2 --out /tmp/trial

The students (cycled through when there are more than kinds): every reference solution; the
handout untouched; wrong answers; an answer cell that raises; an answer cell deleted; the book's
notebook instead of the handout; two notebooks of one chapter; a file that is not JSON; and
three attacks (a check replaced, a forged answers file, a file written into the package). Prints
the time of each run, the gradebook's totals and whether the second run wrote the same bytes.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from commlab.classroom.edition import BOOK, exercises, solutions

CHAPTERS = {"01": "01_why_communication.ipynb", "06": "06_quantization.ipynb"}
ATTACK_CHECK = "import commlab.chapters.exercises.{ch} as m\nm.{check} = lambda a: True\n{var} = 0\n"
ATTACK_FORGE = ("import json, os\nopen(os.environ['COMMLAB_ANSWERS'], 'a').write(json.dumps("
                "{{'exercise': '{name}', 'points': 1000, 'value': 0}}) + '\\n')\n{var} = 0\n")
ATTACK_WRITE = ("import commlab, os\ntry:\n    open(os.path.join(os.path.dirname(commlab.__file__), 'chapters', "
                "'exercises', '{ch}.py'), 'a').write('\\n{check} = lambda a: True\\n')\nexcept OSError:\n    pass\n{var} = 0\n")


def _answers(kind: str, exs) -> list:
    """The source of each exercise's cell for a student of ``kind`` (None: left as handed out)."""
    worked = [solutions().solution_source(ex.chapter, ex.check) for ex in exs]
    fill = {"honest": worked, "untouched": [None] * len(exs),
            "wrong": [f"{ex.variable} = 1\n" if i % 2 == 0 else s for i, (ex, s) in enumerate(zip(exs, worked))],
            "raises": [f"{ex.variable} = 1 / 0\n" for ex in exs],
            "attack_check": [ATTACK_CHECK.format(ch=ex.chapter, check=ex.check, var=ex.variable) for ex in exs],
            "attack_forge": [ATTACK_FORGE.format(name=ex.name, var=ex.variable) for ex in exs],
            "attack_write": [ATTACK_WRITE.format(ch=ex.chapter, check=ex.check, var=ex.variable) for ex in exs]}
    return fill.get(kind, worked)


KINDS = ("honest", "untouched", "wrong", "raises", "deleted", "book", "duplicate", "not_json",
         "attack_check", "attack_forge", "attack_write")


def hand_in(handout: Path, folder: Path, n: int) -> None:
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        student = folder / f"s{i:02d}_{kind}"
        student.mkdir(parents=True)
        for number, name in CHAPTERS.items():
            source = BOOK / name if kind == "book" else handout / name
            nb = nbformat.read(source, as_version=4)
            exs = exercises(nbformat.read(BOOK / name, as_version=4))
            found = exercises(nb)
            for ex, answer in zip(found, _answers(kind, found)):
                if answer is not None:
                    nb.cells[ex.cell].source = (f"from commlab.chapters.exercises import {ex.chapter}\n{answer}"
                                                f"{ex.chapter}.{ex.check}({ex.variable});")
            if kind == "deleted":
                del nb.cells[found[0].cell]
            nbformat.write(nb, student / name)
            if kind == "duplicate" and number == "01":
                nbformat.write(nb, student / name.replace(".ipynb", "-Copy1.ipynb"))
            if kind == "not_json" and number == "06":
                (student / name).write_text("{ this is not a notebook")
            assert len(exs) == len(found) or kind == "deleted"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="classroom-trial", help="a folder to make (removed first)")
    a = ap.parse_args()
    root = Path(a.out).resolve()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    cli = [sys.executable, "-m", "commlab", "classroom"]
    subprocess.run(cli + ["student", "--out", str(root / "handout"), "--chapters", ",".join(CHAPTERS)], check=True)
    hand_in(root / "handout", root / "submissions", a.students)
    runs = []
    for run in ("first", "second"):
        out = root / run / "gradebook.csv"
        t0 = time.perf_counter()
        subprocess.run(cli + ["grade", str(root / "submissions"), "--out", str(out), "--jobs", str(a.jobs)],
                       check=True, stdout=subprocess.DEVNULL)
        runs.append((time.perf_counter() - t0, out.parent))
        print(f"{run} run: {runs[-1][0]:.0f} s for {a.students} students, {len(CHAPTERS)} chapters", flush=True)
    files = lambda d: {p.relative_to(d): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and  # noqa: E731
                       "journal" not in str(p.relative_to(d))}
    first, second = files(runs[0][1]), files(runs[1][1])
    print(f"files: {len(first)}; the second run wrote the same bytes: {first == second}")
    print((runs[0][1] / "gradebook.csv").read_text())


if __name__ == "__main__":
    main()
