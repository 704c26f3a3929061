"""The files a verb writes (``profile --out``, ``train --out`` and ``--plot``), checked before any
work starts: a file name with the right ending, not a folder, in a folder that exists and where a
file can be created now (tried with an empty temporary file, removed at once: permission bits say
nothing for root, nor for a read-only file system)."""
from __future__ import annotations

import os
import tempfile

from .. import checks


def check_output(p, flag: str, path: str, suffixes) -> str:
    """``path`` if the verb can write it there, else ``p.error`` naming the cause."""
    if isinstance(path, str) and path and os.path.isdir(path):
        p.error(f"{flag} {path!r} is a folder; name a file in it, ending in {' or '.join(suffixes)}")
    try:
        checks.output_path(flag, path, suffixes)
    except (ValueError, TypeError) as e:
        p.error(str(e))
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".probe")
    except OSError as e:
        p.error(f"{flag} {path!r} cannot be written: no file can be created in {folder!r} ({e.strerror or e})")
    os.close(fd)
    os.remove(probe)
    return path
