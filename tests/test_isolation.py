"""commlab.classroom.isolation: a process isolated by it reads everything, writes only its own
folder, does not see what is hidden, holds no capabilities and cannot undo any of it; a shielded
process cannot be read by it."""
import subprocess
import sys

import pytest

from commlab.classroom.isolation import available

PROBE = r'''
import os, sys
from commlab.classroom.isolation import isolate
work, secret = sys.argv[1], sys.argv[2]
os.chdir(work)
isolate(work, [secret])
import commlab, torch
def attempt(what, f):
    try:
        f()
        print(what, "allowed")
    except OSError:
        print(what, "refused")
attempt("package", lambda: open(os.path.join(os.path.dirname(commlab.__file__), "x.py"), "w"))
attempt("etc", lambda: open("/etc/ld.so.preload", "a"))
attempt("secret", lambda: open(os.path.join(secret, "f")).read())
attempt("work", lambda: open("answers.jsonl", "w").write("x"))
attempt("tmp", lambda: __import__("tempfile").NamedTemporaryFile().write(b"x"))
attempt("remount", lambda: (_ for _ in ()).throw(OSError()) if os.system("mount -o remount,rw / 2>/dev/null") else None)
attempt("parent", lambda: open(f"/proc/{os.getppid()}/mem", "rb").read(1))
print("capabilities", open("/proc/self/status").read().split("CapEff:")[1].split()[0])
print("torch", float(torch.ones(3).sum()))
'''


@pytest.mark.skipif(available() is not None, reason=f"isolation is not available here: {available()}")
def test_an_isolated_process_writes_only_its_folder(tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "f").write_text("the answers")
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "work"), str(tmp_path / "secret")],
                         capture_output=True, text=True, timeout=120)
    said = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert said == {"package": "refused", "etc": "refused", "secret": "refused", "work": "allowed",
                    "tmp": "allowed", "remount": "refused", "parent": "refused",
                    "capabilities": "0000000000000000", "torch": "3.0"}, out.stderr
    assert (tmp_path / "work" / "answers.jsonl").read_text() == "x"


def test_availability_is_a_reason_or_none():
    why = available()
    assert why is None or isinstance(why, str) and why
