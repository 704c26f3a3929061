"""Where a student's code runs while it is graded: a read-only world with one writable folder.

:func:`isolate` turns the calling process (before it starts any student code: the notebook's
runner before its kernel, a sandbox's child before it reads the student's source) into one that

* sees every file system **read-only** (its own mount namespace, ``unshare(CLONE_NEWNS)``, every
  mount remounted read-only): the installed package, the Python installation, the autograder's
  code and everything else can be read and imported, never changed;
* may write only in its **throwaway folder** (a writable bind mount; ``HOME`` and ``TMPDIR``
  point into it) and a fresh ``/dev/shm``;
* does not see the folders it must not read: every student's submissions, the gradebook being
  written, the grader's private files and the reference solutions (an empty read-only tmpfs is
  mounted over each);
* has **no capabilities** (bounding, ambient, effective and permitted sets cleared, and
  ``no_new_privs``), so it cannot undo any of that (no remount), cannot trace or read the memory
  of the grader (the kernel refuses ptrace of a process with capabilities the tracer lacks), and
  cannot gain privileges from a set-uid program.

As root this needs nothing else; as another user it creates a user namespace first (most Linux
systems allow it). Where neither works, :func:`available` says why, and grading refuses unless
the instructor chooses ``isolate="none"`` (the guide states what that gives up).

Linux only (``ctypes`` calls of libc's ``unshare``, ``mount``, ``prctl`` and ``capset``).
"""
from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = \
    1, 2, 4, 8, 32, 4096, 16384, 1 << 18
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 4, 24, 38, 47, 4
_CAP_VERSION_3 = 0x20080522
_OPTIONAL = ("/proc", "/sys")  # mounts the kernel already guards; remounting them may be refused


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(libc, source, target, fstype, flags, data=None) -> None:
    enc = (lambda s: None if s is None else str(s).encode())
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {target}")


def _mount_points() -> list[tuple[str, int]]:
    """(mount point, the flags it must keep: nosuid, nodev, noexec) of every mount, outermost first."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        point = fields[4].encode().decode("unicode_escape")
        options = fields[5].split(",")
        keep = (MS_NOSUID if "nosuid" in options else 0) | (MS_NODEV if "nodev" in options else 0) | \
            (MS_NOEXEC if "noexec" in options else 0)
        points.append((point, keep))
    return sorted(points, key=lambda p: p[0].count("/") + (p[0] != "/"))


def _enter_namespace(libc) -> None:
    if os.geteuid() == 0:
        _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        return
    uid, gid = os.geteuid(), os.getegid()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare(CLONE_NEWUSER | CLONE_NEWNS)")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def _drop_capabilities(libc) -> None:
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:  # EINVAL: no such cap
            break
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: all empty (two 32-bit words each)
    _check(libc.capset(header, data), "capset")


def isolate(work, hidden=()) -> None:
    """Make this process (and everything it starts) see every file system read-only but ``work``,
    with each path of ``hidden`` (folders or files) covered, and hold no capabilities."""
    libc = _libc()
    work = Path(work).resolve()
    _enter_namespace(libc)
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    _mount(libc, work, work, None, MS_BIND)  # its own mount, before every other one is made read-only
    for point, keep in _mount_points():
        if point == str(work):
            continue
        try:
            _mount(libc, None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | keep)
        except OSError:
            if not point.startswith(_OPTIONAL) and Path(point).exists():
                raise
    _mount(libc, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=1g,mode=1777")
    for path in hidden:
        path = Path(path)
        if path.is_dir():
            _mount(libc, "tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0")
        elif path.exists():
            _mount(libc, "/dev/null", path, None, MS_BIND)
    _drop_capabilities(libc)
    os.chdir(os.getcwd())  # a working folder opened before the mounts is found again through them
    for name, sub in (("HOME", ""), ("TMPDIR", "tmp"), ("JUPYTER_RUNTIME_DIR", ".runtime"),
                      ("IPYTHONDIR", ".ipython"), ("MPLCONFIGDIR", ".matplotlib"), ("XDG_CACHE_HOME", ".cache")):
        (work / sub).mkdir(parents=True, exist_ok=True)
        os.environ[name] = str(work / sub)
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    import tempfile

    tempfile.tempdir = None  # found again from TMPDIR at its next use


def shield() -> None:
    """Make this (trusted) process undumpable: no process without ``CAP_SYS_PTRACE`` may trace
    it or read its memory (``/proc/<pid>/mem``), also one of the same user, as an isolated
    submission graded by a user other than root is."""
    if sys.platform.startswith("linux"):
        _check(_libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def available() -> str | None:
    """None where :func:`isolate` works here, else why not. Tried in a fresh interpreter running this
    file (which imports no torch: a second or less), never by forking a process that may have threads."""
    if not sys.platform.startswith("linux"):
        return f"isolation needs Linux's mount namespaces; this is {sys.platform}"
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        tried = subprocess.run([sys.executable, os.path.abspath(__file__), tmp], capture_output=True, text=True,
                               timeout=60)
    return None if tried.returncode == 0 else (tried.stdout.strip() or tried.stderr.strip()[-300:] or
                                               f"the trial exited with status {tried.returncode}")


if __name__ == "__main__":  # available()'s trial: isolate in the folder given, say why not if it fails
    try:
        os.chdir(sys.argv[1])
        isolate(sys.argv[1])
    except Exception as e:  # noqa: BLE001 - the reason, for available() to report
        print(f"{type(e).__name__}: {e}")
        sys.exit(1)
