"""Reference solutions of chapter 04: synchronization (BSP, SSP, ASP, backup workers)."""
from __future__ import annotations

VARIABLES = {"check_ssp_bound": "answer", "check_backup_wait": "answer", "check_clock_spread": "clock_spread"}


def ssp_bound():
    """Exercise 1: the most updates between a read and its apply under SSP(3) with 16 workers."""
    N, phi = 16, 3
    return (N - 1) * (2 * phi + 1)     # each of the N - 1 others pushes at most 2 phi + 1 times meanwhile


def backup_wait():
    """Exercise 2: P(more than 2 of 16 workers straggle), each with p = 0.1: a binomial tail."""
    from math import comb

    N, p, b = 16, 0.1, 2
    return 1 - sum(comb(N, k) * p ** k * (1 - p) ** (N - k) for k in range(b + 1))


def clock_spread():
    """Exercise 3: ``clock_spread(log, workers)``, the largest max - min of the workers' clocks."""
    def clock_spread(log, workers):
        clocks, spread = [0] * workers, 0
        for w, step, _ in log:
            clocks[w] = step
            spread = max(spread, max(clocks) - min(clocks))
        return spread
    return clock_spread
