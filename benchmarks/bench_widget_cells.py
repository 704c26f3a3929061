"""The chapters' widget cells executed many times, as the book's build executes them: do any stall?

    python benchmarks/bench_widget_cells.py                 # 25 kernels x 12 widget cells
    python benchmarks/bench_widget_cells.py --runs 5 --timeout 30 --only 04 07
    python benchmarks/bench_widget_cells.py --whole 04 --runs 6   # chapter 04 whole, cell by cell

Every chapter ends with an explorer: a figure and controls (``ipywidgets``). A book build
executes each notebook in a fresh kernel through ``nbclient``, one cell at a time, waiting for
the kernel's reply to each. With ipykernel 7 about one widget cell in sixty never got its reply:
the kernel sat idle and the build waited out its cell timeout (600 s) before it went on.

This benchmark takes each widget cell's source from the chapters' notebooks as they are now,
gives it the inputs its chapter built earlier (a small stand-in where the chapter trained for
them), and executes all of them in one kernel per run, ``--runs`` times, each cell under
``--timeout`` seconds. It prints, per cell, the executions, the median and the longest seconds
and the stalls (a cell that hit its timeout), with the versions of the packages that matter.
With ``--whole NN`` it executes chapter NN's notebook whole instead, every cell, as the book's
build does, and reports its code cells the same way (the widget cell comes after a chapter's
runs, which the stand-ins above leave out).
"""
from __future__ import annotations

import argparse
import statistics
import time
from importlib.metadata import version
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

from commlab.measure.bench import table

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
# what each widget cell needs from its chapter's earlier cells, built small
SETUP = {
    "01": "from commlab import models\nnames = ['mlp', 'resnet20', 'resnet50', 'bert-base', 'bert-large']\n"
          "stats = {n: models.model_intensity(n) for n in names}",
    "05": "bsp = chapter.local_sgd_run(1, None, 256, 8, 0.5, 0)\nlocal, PERIODS, grid = {}, [], {}",
    "06": "import torch\nx = torch.randn(4096, generator=torch.Generator().manual_seed(0))",
    "07": "import torch\nG1 = torch.randn(128, 64, generator=torch.Generator().manual_seed(0))\n"
          "from commlab.chapters import gpu_compression as gpu",
}
PACKAGES = ("ipykernel", "ipywidgets", "nbclient", "jupyter_client", "pyzmq", "tornado")


def widget_cells() -> list[tuple[str, str]]:
    """(chapter, source) of every cell that shows an explorer, in the book's order."""
    cells = []
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and "explorer(" in cell.source and "def " not in cell.source:
                cells.append((path.name[:2], cell.source))
    return cells


def harness(cells) -> nbformat.NotebookNode:
    """One notebook: per widget cell, a setup cell (its chapter module as ``chapter``, its inputs)
    and then the widget cell itself, unchanged."""
    nb = nbformat.v4.new_notebook()
    for chapter, source in cells:
        setup = f"from commlab.chapters import ch{chapter} as chapter\n" + SETUP.get(chapter, "")
        nb.cells.append(nbformat.v4.new_code_cell(setup, metadata={"role": "setup"}))
        nb.cells.append(nbformat.v4.new_code_cell(source, metadata={"role": "widget", "chapter": chapter}))
    return nb


def whole(chapter: str) -> nbformat.NotebookNode:
    """Chapter ``chapter``'s notebook, every code cell marked to be reported."""
    path = next(NOTEBOOKS.glob(f"{chapter}_*.ipynb"), None)
    if path is None:
        raise SystemExit(f"no chapter {chapter!r}; chapters: {sorted(p.name[:2] for p in NOTEBOOKS.glob('[0-9][0-9]_*.ipynb'))}")
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.metadata.update(role="widget" if "explorer(" in cell.source else "cell", chapter=f"{chapter} c{i}")
    return nb


def run_once(nb, timeout: float) -> list[tuple[str, float, str]]:
    """Execute the harness in a fresh kernel: (chapter, seconds, what) per widget cell (and per
    code cell of a whole chapter), what being "" or "stalled" (the limit passed with the kernel
    idle: the reply never came) or "slow" (interrupted at the limit while still computing)."""
    nb = nbformat.from_dict(nb)  # a fresh copy: outputs of the last run are not carried
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", interrupt_on_timeout=True,
                            allow_errors=False, resources={"metadata": {"path": str(NOTEBOOKS)}})
    out = []
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            start = time.perf_counter()
            stalled = slow = False
            try:
                client.execute_cell(cell, index)
            except CellTimeoutError:
                stalled = True
            except CellExecutionError as e:  # interrupted at the limit while still computing
                if "KeyboardInterrupt" not in str(e):
                    raise
                slow = True
            # at the limit nbclient interrupts the kernel; an idle kernel (the stall) raises nothing
            stalled = stalled or (not slow and time.perf_counter() - start >= 0.99 * timeout)
            if cell.metadata.get("role") in ("widget", "cell"):
                out.append((cell.metadata["chapter"], time.perf_counter() - start, "stalled" if stalled
                            else "slow" if slow else ""))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=25, help="kernels started; each executes every widget cell once")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a cell may take (an idle kernel at the limit: a stall)")
    ap.add_argument("--only", nargs="*", default=None, help="chapters to take widget cells from (e.g. 04 07)")
    ap.add_argument("--whole", default=None, help="execute this chapter's whole notebook instead (e.g. 04)")
    args = ap.parse_args()
    if args.whole:
        nb = whole(args.whole)
    else:
        cells = [c for c in widget_cells() if args.only is None or c[0] in args.only]
        if not cells:
            raise SystemExit(f"no widget cell in chapters {args.only}; chapters with one: "
                             f"{sorted({c for c, _ in widget_cells()})}")
        nb = harness(cells)
    print(", ".join(f"{p} {version(p)}" for p in PACKAGES))
    times: dict[str, list[float]] = {}
    counts: dict[str, dict[str, int]] = {}
    start = time.perf_counter()
    for run in range(args.runs):
        for i, (chapter, seconds, what) in enumerate(run_once(nb, args.timeout)):
            key = f"{i:02d} ch{chapter}"
            times.setdefault(key, []).append(seconds)
            count = counts.setdefault(key, {"stalled": 0, "slow": 0})
            if what:
                count[what] += 1
        done = sum(len(v) for v in times.values())
        print(f"run {run + 1}/{args.runs}: {done} cells executed, "
              f"{sum(c['stalled'] for c in counts.values())} stalled", flush=True)
    rows = [[k, len(v), f"{statistics.median(v):.2f}", f"{max(v):.2f}", counts[k]["stalled"], counts[k]["slow"]]
            for k, v in times.items()
            if not args.whole or counts[k]["stalled"] or max(v) > 1.0]  # a whole chapter: cells of 1 s or more
    table("Seconds per execution, stalls (the reply never came) and slow cells (still computing at the limit)",
          ["cell", "executions", "median s", "longest s", "stalled", "slow"], rows)
    total = sum(len(v) for v in times.values())
    print(f"{total} executions in {time.perf_counter() - start:.0f} s, "
          f"{sum(c['stalled'] for c in counts.values())} stalled, {sum(c['slow'] for c in counts.values())} slow "
          f"(limit {args.timeout:g} s a cell)")

if __name__ == "__main__":
    main()
