"""Exercises of chapter 04: synchronization (BSP, SSP, ASP, backup workers)."""
from __future__ import annotations

import math
import random

from ...history import clock_gaps
from . import check_function, check_number

# the settings the exercises name
SSP_BOUND = dict(workers=16, staleness=3)                   # exercise 1
BACKUP_WAIT = dict(workers=16, prob=0.1, backups=2)         # exercise 2


def ssp_staleness_bound(workers: int, staleness: int) -> int:
    """The most server updates between a worker's read and the application of its gradient under
    SSP(phi): each of the N - 1 others pushes at most 2 phi + 1 times in between."""
    return (workers - 1) * (2 * staleness + 1)


def wait_probability(workers: int, prob: float, backups: int = 0) -> float:
    """P(more than ``backups`` of ``workers`` straggle in a step), each independently with ``prob``:
    the fraction of steps in which waiting for the first N - b gradients still waits for a straggler."""
    at_most = sum(math.comb(workers, k) * prob ** k * (1 - prob) ** (workers - k) for k in range(backups + 1))
    return 1 - at_most


def check_ssp_bound(answer) -> bool:
    """Exercise 1: the largest staleness SSP(phi = 3) allows with N = 16 workers."""
    want = ssp_staleness_bound(**SSP_BOUND)
    return check_number("largest staleness under SSP(3) with 16 workers", answer, want, rel=0.0,
                        hint="Count how often each of the other workers can push between the read and the apply.")


def check_backup_wait(answer) -> bool:
    """Exercise 2: the fraction of steps in which 16 workers with 2 backups still wait for a
    straggler, each worker straggling with probability 0.1."""
    want = wait_probability(**BACKUP_WAIT)
    return check_number("fraction of steps that wait with 2 backups", answer, want, rel=0.01,
                        hint="The number of stragglers in a step is binomial(16, 0.1); the step waits if it exceeds 2.")


def _random_log(rng: random.Random, workers: int, steps: int) -> list:
    """A server log: every worker's pushes 1..steps, interleaved at random, with made-up staleness."""
    pending = [w for w in range(workers) for _ in range(steps)]
    rng.shuffle(pending)
    clocks, log = [0] * workers, []
    for w in pending:
        clocks[w] += 1
        log.append((w, clocks[w], rng.randrange(3 * workers)))
    return log


def check_clock_spread(fn) -> bool:
    """Exercise 3: ``fn(log, workers)`` returns the largest spread max_w c_w - min_v c_v of the
    workers' clocks over a server log of (worker, step, staleness) triples."""
    def trial(f):
        rng = random.Random(4)
        cases = [([], 3), ([(0, 1, 0)], 1), ([(0, 1, 0)], 2), ([(1, 1, 0), (1, 2, 0), (0, 1, 1)], 2)]
        cases += [(_random_log(rng, w, s), w) for w, s in [(2, 5), (4, 10), (8, 20), (5, 1)]]
        for log, workers in cases:
            gaps = clock_gaps(log, workers)
            want = int(gaps.max()) if len(gaps) else 0
            got = f(list(log), workers)
            assert got == want, (f"for {len(log)} pushes of {workers} workers you returned {got!r}, "
                                 f"the largest spread is {want}")
    return check_function("clock spread", fn, trial)
