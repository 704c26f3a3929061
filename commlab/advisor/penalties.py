"""Convergence penalties: how many more rounds an option needs to reach a target, measured.

A communication-saving option changes how fast training converges per round (a round: every
worker computes one gradient). The rates of the literature bound it up to constants, so the
advisor uses measured penalties instead: each option of :data:`OPTIONS` trains the same problem
as BSP, from the same seeds, and its penalty is

    penalty = rounds to the target with the option / rounds to the target with BSP

**How it is measured** (:data:`SETUP`, :func:`measure`): the digits MLP on 8 workers with the
Trainer (threads), batch 32 per worker, learning rate 0.05 with momentum 0.9, up to 300 rounds,
test accuracy measured every 5 rounds; the target is a test accuracy of 0.93; each option on the
three seeds of :data:`SEEDS`, the rounds averaged over seeds. An option that misses the target on any seed
gets ``reached = False`` and no penalty: the advisor leaves it out and says why. Lossless options
(an all-reduce algorithm, a parameter server, a schedule, a 3D layout) compute the same updates
and have penalty 1 by construction.

The table ships as ``penalties.csv`` beside this module; ``python -m commlab.advisor``
measures it again and rewrites it (about 25 minutes on a 2-core laptop), and a test re-measures a row.
Asynchronous rules (SSP, ASP) are not in it: their steps are single updates, not rounds, so at
one learning rate they are not comparable with BSP's averaged step, and the simulator has no
stragglers, where they pay off (chapter 04 measures them).
"""
from __future__ import annotations

import math
import os

import pandas as pd

SETUP = dict(model="mlp", data="digits", workers=8, batch_size=32, lr=0.05, momentum=0.9, eval_every=5,
             progress=False)
STEPS, TARGET, SEEDS = 300, 0.93, (0, 1, 2)
OPTIONS = {
    "bsp": dict(kind="reference"),
    "local_sgd(period=4)": dict(kind="sync", sync="local_sgd(period=4)"),
    "local_sgd(period=16)": dict(kind="sync", sync="local_sgd(period=16)"),
    "dpsgd": dict(kind="sync", sync="dpsgd"),
    "fp16": dict(kind="compress", compress="fp16"),
    "qsgd(levels=16)": dict(kind="compress", compress="qsgd(levels=16)"),
    "terngrad": dict(kind="compress", compress="terngrad"),
    "topk(0.01)": dict(kind="compress", compress="topk(0.01)"),
    "topk(0.01)+ef": dict(kind="compress", compress="topk(0.01)+ef"),
    "signsgd+ef": dict(kind="compress", compress="signsgd+ef"),
}
PATH = os.path.join(os.path.dirname(__file__), "penalties.csv")


def rounds_to_target(history, workers: int, batch: int, target: float = TARGET) -> float:
    """Rounds (samples / (workers x batch)) until the test accuracy first reaches ``target``."""
    samples = 0
    for s, acc in zip(history.samples or [workers * batch] * len(history), history.test_accuracy):
        samples += s
        if not math.isnan(acc) and acc >= target:
            return samples / (workers * batch)
    return math.nan


def measure_one(name: str, seed: int, steps: int = STEPS) -> float:
    """Rounds to the target of option ``name`` from ``seed`` (NaN if never reached, or if the
    run diverged)."""
    from ..history import Diverged
    from ..train import Trainer

    if name not in OPTIONS:
        raise ValueError(f"unknown option {name!r}; valid: {', '.join(OPTIONS)}")
    kw = {k: v for k, v in OPTIONS[name].items() if k != "kind"}
    try:
        history = Trainer(seed=seed, **SETUP, **kw).fit(steps)
    except Diverged:
        return math.nan
    return rounds_to_target(history, SETUP["workers"], SETUP["batch_size"])


def measure(names=tuple(OPTIONS), seeds=SEEDS, steps: int = STEPS) -> pd.DataFrame:
    """The penalty table (see the module doc)."""
    rounds = {n: [measure_one(n, s, steps) for s in seeds] for n in dict.fromkeys(["bsp", *names])}
    base = sum(rounds["bsp"]) / len(seeds)
    rows = []
    for n, r in rounds.items():
        reached = not any(math.isnan(x) for x in r)
        mean = sum(r) / len(r) if reached else math.nan
        rows.append(dict(option=n, kind=OPTIONS[n]["kind"], rounds=mean, bsp_rounds=base,
                         penalty=mean / base if reached else math.nan, reached=reached,
                         **{f"rounds_seed{s}": x for s, x in zip(seeds, r)}))
    return pd.DataFrame(rows).set_index("option")


def load() -> pd.DataFrame:
    """The shipped table."""
    return pd.read_csv(PATH, index_col="option")


def write(path: str = PATH) -> pd.DataFrame:
    """Measure the table again and write it (aside, then renamed: never half-written)."""
    table = measure()
    tmp = path + ".partial"
    table.to_csv(tmp)
    os.replace(tmp, path)
    return table
