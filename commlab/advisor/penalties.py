"""Convergence penalties: how many more rounds an option needs to reach a target, measured.

A communication-saving option changes how fast training converges per round (a round: every
worker computes one gradient). The rates of the literature bound it up to constants, so the
advisor uses measured penalties instead:

    penalty = rounds to the target with the option, at its best learning rate
              / rounds to the target with BSP, at BSP's best learning rate

**How it is measured** (:data:`PROBLEMS`, :data:`COMMON`, :func:`measure`). Two problems, each on 8
workers with the Trainer (threads), batch 32 per worker, SGD with momentum 0.9: the digits MLP
(target: test accuracy 0.93, evaluated every 5 rounds) and the tiny transformer counting markers in
token sequences (``model="transformer"``, ``d_model=16``, one layer; target 0.95, evaluated every 2
rounds). Every option, BSP included, trains on every learning rate of :data:`LRS` from the three
seeds of :data:`SEEDS`; its rounds at a learning rate are the mean over seeds, and its learning rate
is the one with the fewest (a learning rate at which any seed misses the target does not count).
Tuning each option, and not only BSP, matters: at one learning rate an option that normalises its
step (scaled sign-SGD) looks faster than exact SGD only because the shared rate was too small for
SGD. BSP runs up to :data:`STEPS` rounds; every other option up to :data:`CAP` times BSP's rounds
(an option slower than that is *not reached*: ``reached = False``, no penalty, and the advisor
leaves it out and says why). Lossless options (an all-reduce algorithm, a parameter server, a
schedule, a 3D layout) compute the same updates as BSP and have penalty 1 by construction.

**What the advisor multiplies by** (:func:`for_ranking`): the worse of the two problems' penalties,
and never less than 1. A penalty below 1 on a small problem is a property of that problem at these
learning rates (no rate of the literature predicts an option converging faster than exact SGD), so
ranking on it would let a small problem's artifact pick the configuration of a large one; each row's
note gives the measured numbers beside the one used.

The table (one row per problem and option) ships as ``penalties.csv`` beside this module;
``python -m commlab.advisor`` measures it again on two processes, one per core, and rewrites it
(180 runs of a few seconds each; timed at 402 s, 109 s for the MLP and 293 s for the transformer,
on a 2-core machine that other jobs kept at a load average between 10 and 18). The runs are
deterministic on one machine: measured again, the table was the same byte for byte, and a test
measures a row again and finds it equal. The compressed options run as the Trainer sends them by
default, the fused gradient compressed as one tensor (``compress_per="bucket"``); measured when the
Trainer still compressed each tensor alone, QSGD paid 1.00 on both problems (now 0.97 on the MLP
and 0.95 on the transformer) and TernGrad 0.97 and 1.05 (now 1.17 and 1.44: one scaler for the
whole gradient, where TernGrad's paper keeps one per layer), and every other row was the same. Across float kernels the rounds move by a
few at some learning rates: measured again under ``ATEN_CPU_CAPABILITY=default`` (741 s) instead of
AVX-512 (the shipped table), 18 of the 20 rows are equal; on the transformer TernGrad pays 1.32
instead of 1.44 and sign-SGD with error feedback 1.27 instead of 1.29, and the penalties the advisor
ranks by differ in those two. Asynchronous rules (SSP, ASP) are not in it: their steps are single
updates, not rounds, and the simulator has no stragglers, where they pay off (chapter 04).
"""
from __future__ import annotations

import math
import os

import pandas as pd

from ..files import write_atomic

COMMON = dict(workers=8, batch_size=32, momentum=0.9, progress=False)
PROBLEMS = {
    "digits-mlp": dict(trainer=dict(model="mlp", data="digits", eval_every=5), target=0.93, steps=300),
    "tokens-transformer": dict(trainer=dict(model="transformer", data="tokens", eval_every=2,
                                            model_kw=dict(d_model=16, layers=1)), target=0.95, steps=100),
}
LRS = (0.02, 0.05, 0.1)
SEEDS = (0, 1, 2)
CAP = 3  # an option may take up to CAP x BSP's rounds
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


def rounds_to_target(history, workers: int, batch: int, target: float) -> float:
    """Rounds (samples / (workers x batch)) until the test accuracy first reaches ``target``."""
    samples = 0
    for s, acc in zip(history.samples or [workers * batch] * len(history), history.test_accuracy):
        samples += s
        if not math.isnan(acc) and acc >= target:
            return samples / (workers * batch)
    return math.nan


def trainer_options(problem: str, name: str, lr: float, seed: int) -> dict:
    """The Trainer's keyword arguments for one run of option ``name`` on ``problem``."""
    if problem not in PROBLEMS:
        raise ValueError(f"unknown problem {problem!r}; valid: {', '.join(PROBLEMS)}")
    if name not in OPTIONS:
        raise ValueError(f"unknown option {name!r}; valid: {', '.join(OPTIONS)}")
    kw = {k: v for k, v in OPTIONS[name].items() if k != "kind"}
    return dict(COMMON, **PROBLEMS[problem]["trainer"], **kw, lr=lr, seed=seed)


def measure_one(problem: str, name: str, lr: float, seed: int, steps: int) -> float:
    """Rounds to the target of option ``name`` on ``problem`` at ``lr`` from ``seed``, training up
    to ``steps`` rounds (NaN if never reached, or if the run diverged)."""
    from ..history import Diverged
    from ..train import Trainer

    try:
        history = Trainer(**trainer_options(problem, name, lr, seed)).fit(steps)
    except Diverged:
        return math.nan
    return rounds_to_target(history, COMMON["workers"], COMMON["batch_size"], PROBLEMS[problem]["target"])


def _run(job):
    return measure_one(*job)


def _grid(jobs, processes: int, run=_run) -> list:
    """Every job's result by ``run`` (an importable function; by default its rounds), on ``processes``
    processes each held to its own core (a threads run of these small models keeps its ranks on the
    core it starts from: commlab.runtime.threads)."""
    if processes <= 1:
        return [run(j) for j in jobs]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    ctx = mp.get_context("forkserver")
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    counter = ctx.Value("i", 0)
    with ProcessPoolExecutor(processes, mp_context=ctx, initializer=_pin, initargs=(counter, cores)) as pool:
        return list(pool.map(run, jobs))


def _pin(counter, cores) -> None:
    with counter.get_lock():
        i, counter.value = counter.value, counter.value + 1
    if cores:
        os.sched_setaffinity(0, {cores[i % len(cores)]})


def _best(rounds: dict) -> tuple[float, float]:
    """(learning rate, mean rounds) with the fewest mean rounds over the rates where every seed
    reached the target (the first such rate of LRS on a tie); (NaN, NaN) if none did."""
    means = {lr: sum(r) / len(r) for lr, r in rounds.items() if not any(math.isnan(x) for x in r)}
    if not means:
        return math.nan, math.nan
    lr = min(means, key=lambda k: (means[k], LRS.index(k)))
    return lr, means[lr]


def measure(problems=tuple(PROBLEMS), names=tuple(OPTIONS), lrs=LRS, seeds=SEEDS, processes: int = 2) -> pd.DataFrame:
    """The penalty table (see the module doc): one row per problem and option."""
    rows = []
    for problem in problems:
        steps = PROBLEMS[problem]["steps"]
        bsp_jobs = [(problem, "bsp", lr, s, steps) for lr in lrs for s in seeds]
        bsp = dict(zip(bsp_jobs, _grid(bsp_jobs, processes)))
        bsp_lr, bsp_rounds = _best({lr: [bsp[(problem, "bsp", lr, s, steps)] for s in seeds] for lr in lrs})
        if math.isnan(bsp_rounds):
            raise RuntimeError(f"BSP misses the target of {problem} at every learning rate of {lrs}")
        cap = int(math.ceil(CAP * bsp_rounds))
        others = [n for n in names if n != "bsp"]
        jobs = [(problem, n, lr, s, cap) for n in others for lr in lrs for s in seeds]
        done = {**{(p, n, lr, s): r for (p, n, lr, s, _), r in bsp.items()},
                **{(p, n, lr, s): r for (p, n, lr, s, _), r in zip(jobs, _grid(jobs, processes))}}
        for n in ["bsp", *others]:
            by_lr = {lr: [done[(problem, n, lr, s)] for s in seeds] for lr in lrs}
            lr, mean = _best(by_lr)
            reached = not math.isnan(mean)
            rows.append(dict(problem=problem, option=n, kind=OPTIONS[n]["kind"], lr=lr, rounds=mean,
                             bsp_lr=bsp_lr, bsp_rounds=bsp_rounds, penalty=mean / bsp_rounds, reached=reached,
                             max_rounds=steps if n == "bsp" else cap,
                             **{f"rounds_seed{s}": (by_lr[lr][i] if reached else math.nan)
                                for i, s in enumerate(seeds)},
                             **{f"rounds_lr{x:g}": _best({x: by_lr[x]})[1] for x in lrs}))
    return pd.DataFrame(rows).set_index(["problem", "option"])


def load(path: str = PATH) -> pd.DataFrame:
    """The shipped table, indexed by (problem, option)."""
    return pd.read_csv(path, index_col=["problem", "option"])


def for_ranking(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per option: the penalty the advisor multiplies by (the worse of the problems, at least 1 for
    every option but BSP), whether every problem reached the target, and a note with the measured
    penalties (see the module doc)."""
    table = load() if table is None else table
    rows = {}
    for option, t in table.groupby(level="option", sort=False):
        t = t.droplevel("option")
        measured = ", ".join(f"{p} {v:.2f}" if ok else f"{p} missed" for p, v, ok in
                             zip(t.index, t["penalty"], t["reached"]))
        reached = bool(t["reached"].all())
        worst = float(t["penalty"].max()) if reached else math.nan
        used = worst if option == "bsp" or not reached else max(1.0, worst)
        clamp = "; below 1, ranked as exact SGD" if reached and worst < 1 and option != "bsp" else ""
        rows[option] = dict(penalty=used, reached=reached, note=f"measured {measured}{clamp}")
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("option")


def save(table: pd.DataFrame, path: str) -> pd.DataFrame:
    """Write a measured table as CSV (aside, then renamed: never half-written)."""
    write_atomic(path, table.to_csv())
    return table


def write(path: str = PATH, processes: int = 2) -> pd.DataFrame:
    """Measure the table again and write it (:func:`save`)."""
    return save(measure(processes=processes), path)
