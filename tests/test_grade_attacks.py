"""Grading under attack: submissions of chapter 01 that try to forge their grade, graded in one
run beside an honest one. No attack earns a point, the honest student earns every point, no
score exceeds its maximum, and the package, the reference solutions, the other submissions and
the machine's processes are as they were before."""
import hashlib
import uuid
from pathlib import Path

import nbformat
import pytest

import commlab
from commlab.classroom.edition import BOOK, INSTRUCTOR, exercises
from commlab.classroom.grade import grade
from commlab_instructor import solution_source
from leftovers import tagged

NB = "01_why_communication.ipynb"

ATTACKS = {
    # a check replaced from the answer cell, under its own name and through the helper it calls
    "check_replaced": "import commlab.chapters.exercises.ch01 as m\nm.check_c2c_ratio = lambda a: True\nanswer1 = 0.5\n",
    "helper_replaced": "import commlab.chapters.exercises as E\nE.check_number = lambda *a, **k: True\n"
                       "import commlab.chapters.exercises.ch01 as m, importlib\nimportlib.reload(m)\nanswer1 = 0.5\n",
    # the grader's own functions replaced in the kernel
    "grader_replaced": "import commlab.classroom.limits as L, commlab.classroom.collect as C\n"
                       "L.verdict = lambda *a, **k: None\nL._graded_later = lambda *a, **k: True\n"
                       "C.record = lambda *a, **k: None\nanswer1 = 0.5\n",
    # an answer that reads the expected value from the check's frame when it is converted
    "frame_reader": "class Sneaky:\n    def __float__(self):\n        import sys\n        f = sys._getframe(1)\n"
                    "        while f is not None:\n            for k in ('want', 'expected'):\n"
                    "                if k in f.f_locals:\n                    return float(f.f_locals[k])\n"
                    "            f = f.f_back\n        return 0.5\nanswer1 = Sneaky()\n",
    # forged results: extra answer lines claiming points, and score files planted wherever it can write
    "results_rewritten": "import glob, json, os\nfor ex in ('ch01_c2c_ratio', 'ch01_speedup', 'ch01_max_workers'):\n"
                         "    with open(os.environ['COMMLAB_ANSWERS'], 'a') as f:\n"
                         "        f.write(json.dumps({'exercise': ex, 'points': 1000, 'score': 1000, 'value': 0.5}) + '\\n')\n"
                         "for d in glob.glob('/tmp/*/'):\n    try:\n"
                         "        open(d + 'scores.json', 'w').write(json.dumps({ex: [1000, 'correct'] for ex in ('ch01_c2c_ratio',)}))\n"
                         "    except OSError:\n        pass\nanswer1 = 0.5\n",
    # a file written into the package, for the scoring process (or the next student) to import
    "package_written": "import commlab, os\npath = os.path.join(os.path.dirname(commlab.__file__), 'chapters', 'exercises', 'ch01.py')\n"
                       "try:\n    open(path, 'a').write('\\ncheck_c2c_ratio = lambda a: True\\n')\nexcept OSError:\n    pass\n"
                       "answer1 = 0.5\n",
    # the reference solution run from the instructor's folder
    "solution_run": "from commlab.classroom.edition import solutions\n"
                    "exec(solutions().solution_source('ch01', 'check_c2c_ratio'))\n",
    # another student's notebook overwritten, and a daemon left running to write later
    "neighbour_and_daemon": "import glob, os, subprocess, sys\nfor f in glob.glob(FOLDER + '/*/*.ipynb'):\n"
                            "    try:\n        open(f, 'w').write('{}')\n    except OSError:\n        pass\n"
                            "subprocess.Popen([sys.executable, '-c', 'import os, time\\nif os.fork() == 0:\\n    time.sleep(300)'],"
                            " start_new_session=True)\nsubprocess.Popen(['sleep', '300'], start_new_session=True)\n"
                            "answer1 = 0.5\n",
}


def _hand_in(folder, who, answers):
    nb = nbformat.read(BOOK / NB, as_version=4)
    for ex, source in zip(exercises(nb), answers):
        if source is not None:
            nb.cells[ex.cell].source = f"from commlab.chapters.exercises import ch01\n{source}ch01.check_{ex.name[5:]}({ex.variable});"
    (folder / who).mkdir(parents=True)
    nbformat.write(nb, folder / who / NB)


def _fingerprint(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path).encode() + path.read_bytes())
    return digest.hexdigest()


@pytest.mark.timeout(900)
def test_no_attack_earns_a_point_and_nothing_is_left_changed(tmp_path, monkeypatch):
    tag = uuid.uuid4().hex
    monkeypatch.setenv("COMMLAB_ATTACK_TEST", tag)  # inherited by every process grading starts
    folder = tmp_path / "class"
    found = exercises(nbformat.read(BOOK / NB, as_version=4))
    _hand_in(folder, "ada", [solution_source("ch01", ex.check) for ex in found])
    for who, attack in ATTACKS.items():
        _hand_in(folder, who, [attack.replace("FOLDER", repr(str(folder))), None, None])
    package, solutions = _fingerprint(Path(commlab.__file__).parent), _fingerprint(INSTRUCTOR)
    ada = (folder / "ada" / NB).read_bytes()

    book = grade(folder, "01", exercise_limit=30, jobs=2, isolate="namespace", say=lambda *a: None)

    points = book.groupby("student").points.sum().to_dict()
    assert points == {"ada": 3.0, **{who: 0.0 for who in ATTACKS}}, book.to_string()
    assert book.points.max() <= 1.0 and set(book.max_points) == {1.0}
    by = {(r.student, r.exercise): r.message for r in book.itertuples()}
    assert by[("frame_reader", "ch01_c2c_ratio")].startswith("C2C ratio of BERT-Large: not yet: 0.5 is not")
    assert by[("solution_run", "ch01_c2c_ratio")].startswith("the answer cell raised ")
    assert _fingerprint(Path(commlab.__file__).parent) == package
    assert _fingerprint(INSTRUCTOR) == solutions
    assert (folder / "ada" / NB).read_bytes() == ada
    assert not list(Path("/tmp").glob("*/scores.json"))
    assert tagged("COMMLAB_ATTACK_TEST", tag) == []


def test_isolation_must_be_known_and_available(tmp_path):
    (tmp_path / "ann").mkdir()
    nbformat.write(nbformat.read(BOOK / NB, as_version=4), tmp_path / "ann" / NB)
    with pytest.raises(ValueError, match="isolate='docker' is not one of namespace, none"):
        grade(tmp_path, "01", isolate="docker")
