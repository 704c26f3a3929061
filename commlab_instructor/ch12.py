"""Reference solutions of chapter 12: putting it together."""
from __future__ import annotations

VARIABLES = {"check_time_to_target": "answer", "check_local_sgd": "answer", "check_gather_factor": "answer"}


def time_to_target():
    """Exercise 1: hours = iteration seconds x BSP's rounds x the penalty / 3600."""
    iteration_s, rounds, penalty = 0.30, 5000, 1.19
    return iteration_s * rounds * penalty / 3600


def local_sgd():
    """Exercise 2: ms per round with local SGD: the compute, plus the exposed all-reduce once every H."""
    compute_ms, exposed_ms, H = 250.0, 400.0, 16
    return compute_ms + exposed_ms / H


def gather_factor():
    """Exercise 3: bytes of all-gathered top-k payloads per worker over a dense ring all-reduce's."""
    p, fraction, D = 32, 0.01, 1_000_000         # D cancels out
    payload = fraction * D * (4 + 4)             # a 32-bit value and a 32-bit index per kept value
    gather = (p - 1) * payload                   # every other worker's payload
    ring = 2 * (p - 1) / p * 4 * D
    return gather / ring
