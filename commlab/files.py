"""Writing a file whole or not at all.

The content goes to a temporary file beside the target, which is then renamed over it: a rename
within one file system is atomic, so a reader sees the old file or the new one, and a crash
leaves no half-written file. The new file gets the mode an ordinary ``open`` would give it
(0666 less the umask; a temporary file alone would be readable by its owner only), or ``mode``.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path, content: str | bytes | Callable[[str], None], mode: int | None = None) -> Path:
    """Write ``content`` (text, bytes, or a function that writes the file at the path it is
    given) to ``path`` whole or not at all; the parent folder is made if missing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        if callable(content):
            os.close(fd)
            content(tmp)
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(content.encode() if isinstance(content, str) else content)
        os.chmod(tmp, _default_mode() if mode is None else mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path
