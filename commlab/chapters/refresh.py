"""Store the checked outputs of the book's notebooks.

    python -m commlab.chapters.refresh [--twice] [--warn-only] [notebook ...]

With no notebook, every ``notebooks/*.ipynb``. Each notebook is executed from start to end
(nbclient, kernel python3, in the notebook's folder, at most 600 s a cell, MPLBACKEND unset so
figures take the notebook's inline backend). Then only the cells tagged ``nbval-check-output``
keep outputs, and only their text (stdout, and the text/plain of results and displays): these
are the results nbval compares on every test run (``--nbval-lax``). Every other output,
every execution count and the widget state are stripped, so the stored notebook holds what
CI checks and nothing else. A notebook is written back only if it ran without an error
(through a temporary file renamed over it: never half written), and only if nobody
edited it while it ran.

A checked output must be deterministic. The command refuses to store one that looks
otherwise (a memory address, a wall-clock time, a date, a temporary path), and one nbval
could not compare (stderr, or HTML or other rich output beside the text: print a rounded
table instead); ``--warn-only`` stores it anyway, with the warning. ``--twice`` executes each
notebook twice and refuses outputs that differ between the runs.
"""
from __future__ import annotations

import argparse
import copy
import os
import re
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from .. import files

CHECK_TAG = "nbval-check-output"
CELL_TIMEOUT_S = 600
# mime types nbval never compares (--nbval-lax without nbdime): dropped without a word
IGNORED_MIME = ("image/png", "image/jpeg", "application/vnd.jupyter.widget-view+json")
# cell metadata that says how a run went, not what the cell is
TRANSIENT_CELL_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime")
SUSPICIOUS = (
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "a memory address"),
    (re.compile(r"\b(wall|elapsed|cpu times?)\b", re.I), "a wall-clock time"),
    (re.compile(r"\d+(\.\d+)?\s*it/s\b"), "a progress bar rate"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}"), "a date and time"),
    (re.compile(r"/tmp/|/var/folders/"), "a temporary path"),
)


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def checked_outputs(cell) -> tuple[list, list[str]]:
    """The outputs of one checked code cell that are stored, and the problems found in them.
    Kept: stdout (its pieces merged into one stream, as nbval merges them before comparing),
    and the text/plain of execute_result and display_data (with no execution count, no
    metadata). A problem: stderr, an error, rich output other than images and
    widget views (nbval would compare it), or text that looks non-deterministic."""
    kept, problems = [], []
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            if out.get("name") != "stdout":
                problems.append(f"writes to {out.get('name')}: {_text(out.get('text', '')).strip()[:120]!r}")
                continue
            text = _text(out.get("text", ""))
            stdout = next((k for k in kept if k["output_type"] == "stream"), None)
            if stdout is None:  # one stdout stream, where it first appeared, as nbval merges them
                kept.append(nbformat.v4.new_output("stream", name="stdout", text=text))
            else:
                stdout["text"] += text
        elif kind in ("execute_result", "display_data"):
            data = out.get("data", {})
            rich = sorted(k for k in data if k != "text/plain" and k not in IGNORED_MIME)
            if rich:
                problems.append(f"shows {', '.join(rich)} (print text instead, e.g. a rounded table)")
            if "text/plain" in data:
                text = _text(data["text/plain"])
                if kind == "execute_result":
                    kept.append(nbformat.v4.new_output("execute_result", data={"text/plain": text}))
                else:
                    kept.append(nbformat.v4.new_output("display_data", data={"text/plain": text}))
        elif kind == "error":
            problems.append(f"raised {out.get('ename')}: {out.get('evalue')}")
    for out in kept:
        text = out["text"] if out["output_type"] == "stream" else out["data"]["text/plain"]
        for pattern, what in SUSPICIOUS:
            m = pattern.search(text)
            if m:
                problems.append(f"prints what looks like {what}: {m.group(0)!r}")
    return kept, problems


def code_index(nb, i: int) -> int:
    """The execution count cell ``i`` gets when a fresh kernel runs the notebook top to bottom."""
    return sum(c.cell_type == "code" for c in nb.cells[:i + 1])


def strip_notebook(executed, original=None) -> tuple[nbformat.NotebookNode, list[str]]:
    """The notebook to store, and the problems found. Cell sources and metadata come from
    ``original`` (the notebook as it was on disk; default: ``executed``), outputs from
    ``executed``: a checked cell keeps its text outputs (:func:`checked_outputs`), every other
    cell none; execution counts only on checked cells that keep output (nbval skips a cell
    without one), no transient metadata, no widget state. The two must
    have the same cells."""
    original = executed if original is None else original
    if len(original.cells) != len(executed.cells):
        raise ValueError("the executed notebook has a different number of cells")
    nb = copy.deepcopy(original)
    nb.metadata.pop("widgets", None)
    problems = []
    for i, (cell, ran) in enumerate(zip(nb.cells, executed.cells)):
        for key in TRANSIENT_CELL_METADATA:
            cell.metadata.pop(key, None)
        if cell.cell_type != "code":
            continue
        cell.execution_count = None
        cell.outputs = []
        if CHECK_TAG in cell.metadata.get("tags", []):
            cell.outputs, found = checked_outputs(ran)
            if cell.outputs:  # nbval compares only cells that ran: give them the count a fresh run gives
                cell.execution_count = code_index(nb, i)
                for out in cell.outputs:
                    if out.output_type == "execute_result":
                        out.execution_count = cell.execution_count
            first = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else ""
            problems += [f"cell {i} ({first!r}): {p}" for p in found]
    return nb, problems


def compare_checked(a, b) -> list[str]:
    """Checked cells whose stored outputs differ between two stripped notebooks."""
    return [f"cell {i}: the output differs between two runs" for i, (x, y) in enumerate(zip(a.cells, b.cells))
            if x.cell_type == "code" and CHECK_TAG in x.metadata.get("tags", []) and x.outputs != y.outputs]


def execute(nb, folder: Path) -> nbformat.NotebookNode:
    """Run a copy of the notebook ``nb`` in ``folder``; raises on a cell error."""
    nb = copy.deepcopy(nb)
    env_backend = os.environ.pop("MPLBACKEND", None)  # the kernel inherits the environment
    try:
        NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                       resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        if env_backend is not None:
            os.environ["MPLBACKEND"] = env_backend
    return nb


def _inputs(nb) -> list:
    return [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in nb.cells]


def write_atomic(nb, path: Path) -> None:
    """Write the notebook beside ``path`` and rename it over: never a half-written file. The
    file keeps the mode it had (mkstemp would leave it readable by its owner only)."""
    files.write_atomic(path, nbformat.writes(nb), path.stat().st_mode & 0o777 if path.exists() else None)


def refresh(path: Path, twice: bool = False, warn_only: bool = False) -> bool:
    """Execute one notebook and store its checked outputs; True when it was written."""
    original = nbformat.read(path, as_version=4)
    print(f"{path}: executing ...", flush=True)
    try:
        stored, problems = strip_notebook(execute(original, path.parent), original)
        if twice:
            problems += compare_checked(stored, strip_notebook(execute(original, path.parent), original)[0])
    except Exception as e:  # a cell failed: leave the notebook as it was
        print(f"{path}: NOT written: execution failed: {type(e).__name__}: {str(e)[-2000:]}", file=sys.stderr)
        return False
    for p in problems:
        print(f"{path}: {'WARNING' if warn_only else 'ERROR'}: {p}", file=sys.stderr)
    if problems and not warn_only:
        print(f"{path}: NOT written: {len(problems)} checked output(s) cannot be stored "
              "(fix the cells, untag them, or pass --warn-only)", file=sys.stderr)
        return False
    if _inputs(nbformat.read(path, as_version=4)) != _inputs(original):
        print(f"{path}: NOT written: the notebook was edited while it ran; run the command again",
              file=sys.stderr)
        return False
    write_atomic(stored, path)
    checked = sum(CHECK_TAG in c.metadata.get("tags", []) for c in stored.cells)
    print(f"{path}: written, {checked} checked cell(s)")
    return True


def default_notebooks() -> list[Path]:
    """notebooks/*.ipynb under the working folder, else under the repository of this file."""
    for root in (Path.cwd(), Path(__file__).resolve().parents[2]):
        found = sorted((root / "notebooks").glob("*.ipynb"))
        if found:
            return found
    return []


def main(argv=None) -> int:
    """Refresh the given notebooks (default: notebooks/*.ipynb); 1 if any was not written, else 0."""
    parser = argparse.ArgumentParser(prog="python -m commlab.chapters.refresh", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--twice", action="store_true", help="run twice; refuse outputs that differ")
    parser.add_argument("--warn-only", action="store_true", help="store suspicious outputs, with a warning")
    args = parser.parse_args(argv)
    paths = args.notebooks or default_notebooks()
    if not paths:
        parser.error("no notebooks given and none found under notebooks/")
    failed = [p for p in paths if not refresh(Path(p), args.twice, args.warn_only)]
    if failed:
        print(f"{len(failed)} of {len(paths)} notebook(s) not written: {', '.join(map(str, failed))}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
