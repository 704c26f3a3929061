"""Print how long the book build took to execute each notebook (from jupyter-cache's records in
_build/.jupyter_cache), so that a stalled cell shows in the CI log: a chapter runs in about a minute
here, and one that waited out a cell's timeout shows as several."""
from __future__ import annotations

import sys
from pathlib import Path

from jupyter_cache import get_cache

SLOW_S = 240.0  # a chapter takes 15-80 s on this CI machine, up to 152 s on a slower laptop


def main(root: Path) -> int:
    cache = root / "_build" / ".jupyter_cache"
    if not cache.is_dir():
        print(f"no jupyter-cache at {cache}: the book was not executed with execute_notebooks: cache")
        return 1
    latest = {}
    for record in get_cache(str(cache)).list_cache_records():
        latest[Path(record.uri).name] = record  # later records replace earlier ones
    print(f"{'notebook':45s} {'executed in':>12s}")
    slow = []
    for name, record in sorted(latest.items()):
        seconds = (record.data or {}).get("execution_seconds", float("nan"))
        flag = "  <- slow: a stalled cell?" if seconds > SLOW_S else ""
        print(f"{name:45s} {seconds:10.1f} s{flag}")
        slow += [name] if seconds > SLOW_S else []
    total = sum((r.data or {}).get("execution_seconds", 0.0) for r in latest.values())
    print(f"{'all ' + str(len(latest)) + ' notebooks':45s} {total:10.1f} s")
    if slow:
        print(f"notebooks over {SLOW_S:g} s: {', '.join(slow)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]))
