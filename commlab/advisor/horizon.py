"""Penalties on a long horizon: how the rounds an option costs change as training goes on.

The short problems of :mod:`commlab.advisor.penalties` reach their targets in 42 to 60 rounds.
Error feedback withholds what a compressor drops and pays it back later, so a penalty measured
over 60 rounds says little about a run of thousands: on both short problems top-k 1% with error
feedback misses its target within 3x BSP's rounds. Here one problem runs long enough for that to
show, and the penalty is read at a **ladder of targets**, each a longer horizon:

* **problem** ``digits-cnn``: the two-convolution network (``model="cnn"``) on the 8x8 digits as
  images, 8 workers, batch 32 per worker, SGD with momentum 0.9, test accuracy every 10 rounds,
  :data:`ROUNDS` rounds for every option (about 107 epochs of the 1,438 training images);
* **targets** :data:`TARGETS`, the highest reached by BSP after a few hundred rounds;
* **options** :data:`OPTIONS`: top-k 1% with and without error feedback, and DGC (Lin et al., ICLR
  2018) at 1% after a warm-up of 25 rounds (about 4 epochs, as the paper's warm-up), which applies
  its own momentum correction and error accumulation; BSP is the reference.

Each option trains at every learning rate of :data:`LRS` from every seed of :data:`SEEDS`; at each
target, its rounds are the mean over seeds at its best learning rate (a rate where a seed misses
the target does not count), and ``penalty = rounds / BSP's rounds`` at BSP's best rate for that
target. The table ships as ``horizon.csv`` (``python -m commlab.advisor.horizon`` measures it
again: 20 runs of 600 rounds); :func:`for_ranking` adds, per option, the
horizon its penalty comes from, and keeps an option that the short problems rule out when it
reaches the ladder's highest target, ranked by its penalty there (:func:`top`).
"""
from __future__ import annotations

import math
import os

import pandas as pd

from . import penalties
from .penalties import _best, _grid

PROBLEM = dict(model="cnn", data="digits", data_kw=dict(image=True), workers=8, batch_size=32, momentum=0.9,
               eval_every=10, progress=False)
TARGETS = (0.85, 0.90, 0.93, 0.95)
ROUNDS = 600
LRS = (0.05, 0.1)
SEEDS = (0, 1)
OPTIONS = {  # option: what it changes in the Trainer (DGC's momentum 0.9 is its own, on the local gradient)
    "bsp": dict(),
    "topk(0.01)": dict(compress="topk(0.01)"),
    "topk(0.01)+ef": dict(compress="topk(0.01)+ef"),
    "dgc(ratio=0.01, warmup_steps=25)": dict(compress="dgc(ratio=0.01, warmup_steps=25)", momentum=0.0),
}
PATH = os.path.join(os.path.dirname(__file__), "horizon.csv")


def rounds_at(history, targets=TARGETS) -> list[float]:
    """For each target, the round at which the test accuracy first reaches it (NaN if never)."""
    out = []
    for target in targets:
        hit = next((s for s, a in zip(history.steps, history.test_accuracy) if not math.isnan(a) and a >= target),
                   None)
        out.append(math.nan if hit is None else float(hit))
    return out


def run_one(option: str, lr: float, seed: int, rounds: int = ROUNDS) -> list[float]:
    """The rounds at which one run of ``option`` reaches each target (NaN where it never does, or
    everywhere if it diverged)."""
    from ..history import Diverged
    from ..train import Trainer

    if option not in OPTIONS:
        raise ValueError(f"unknown option {option!r}; valid: {', '.join(OPTIONS)}")
    try:
        history = Trainer(**{**PROBLEM, **OPTIONS[option]}, lr=lr, seed=seed).fit(rounds)
    except Diverged:
        return [math.nan] * len(TARGETS)
    return rounds_at(history)


def _job(job):
    return run_one(*job)


def measure(options=tuple(OPTIONS), lrs=LRS, seeds=SEEDS, rounds: int = ROUNDS, processes: int = 2) -> pd.DataFrame:
    """One row per option and target: learning rate, mean rounds, BSP's, the penalty (module doc)."""
    jobs = [(o, lr, s, rounds) for o in options for lr in lrs for s in seeds]
    done = dict(zip([j[:3] for j in jobs], _grid(jobs, processes, _job)))
    rows = []
    for i, target in enumerate(TARGETS):
        best = {o: _best({lr: [done[(o, lr, s)][i] for s in seeds] for lr in lrs}) for o in options}
        bsp_lr, bsp_rounds = best["bsp"]
        for o in options:
            lr, mean = best[o]
            rows.append(dict(option=o, target=target, lr=lr, rounds=mean, bsp_rounds=bsp_rounds,
                             penalty=mean / bsp_rounds, reached=not math.isnan(mean),
                             **{f"rounds_lr{x:g}_seed{s}": done[(o, x, s)][i] for x in lrs for s in seeds}))
    return pd.DataFrame(rows).set_index(["option", "target"])


def load(path: str = PATH) -> pd.DataFrame:
    """The shipped table, indexed by (option, target)."""
    return pd.read_csv(path, index_col=["option", "target"])


def top(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per option, at the ladder's highest target: whether it reached it, its rounds and its penalty."""
    table = load() if table is None else table
    last = table.xs(max(TARGETS), level="target")
    return last[["reached", "rounds", "bsp_rounds", "penalty"]].astype({"reached": bool})


def short_horizon() -> str:
    """Where the short problems' penalties come from, in words."""
    t = penalties.load().xs("bsp", level="option")
    return "short: " + ", ".join(f"{p} to {penalties.PROBLEMS[p]['target']:g} (BSP {r:.0f} rounds)"
                                 for p, r in t["rounds"].items())


def for_ranking(short: pd.DataFrame | None = None, long: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`commlab.advisor.penalties.for_ranking` with the horizon each penalty comes from: an
    option that a short problem rules out but that reaches the long ladder's highest target is kept,
    ranked by its long-horizon penalty (at least 1), and says so."""
    table = penalties.for_ranking(short).copy()
    table["horizon"] = short_horizon()
    last = top(long)
    for option in table.index:
        if table.loc[option, "reached"] or option not in last.index or not last.loc[option, "reached"]:
            continue
        row = last.loc[option]
        table.loc[option, "penalty"] = max(1.0, float(row["penalty"]))
        table.loc[option, "reached"] = True
        table.loc[option, "horizon"] = f"long: digits-cnn to {max(TARGETS):g} ({row['rounds']:.0f} rounds, BSP {row['bsp_rounds']:.0f})"
        table.loc[option, "note"] += (f"; on the long horizon it reaches {max(TARGETS):g} at "
                                      f"{row['penalty']:.2f} x BSP's rounds")
    return table


def write(path: str = PATH, processes: int = 2) -> pd.DataFrame:
    """Measure the table again and write it (:func:`commlab.advisor.penalties.save`)."""
    return penalties.save(measure(processes=processes), path)


if __name__ == "__main__":  # python -m commlab.advisor.horizon [PATH]
    import sys
    import time

    began = time.perf_counter()
    out = write(sys.argv[1] if len(sys.argv) > 1 else PATH)
    print(out.to_string())
    print(f"measured in {time.perf_counter() - began:.0f} s")
