"""Exercises of chapter 12: putting it together."""
from __future__ import annotations

from . import check_number

# Exercise 1: an iteration of 0.30 s, BSP needs 5,000 rounds, the option's penalty is 1.19.
TIME_CASE = dict(iteration_s=0.30, rounds=5000, penalty=1.19)

# Exercise 2: compute 250 ms per round, the all-reduce exposes 400 ms more; local SGD with period 16.
LOCAL_CASE = dict(compute_ms=250.0, exposed_ms=400.0, period=16)

# Exercise 3: top-k keeps 1% of 32-bit values with a 32-bit index each, on 32 workers that
# all-gather the payloads: the bytes on the wire over a ring all-reduce of the dense gradient.
GATHER_CASE = dict(fraction=0.01, workers=32)


def hours_to_target(case=None) -> float:
    """Hours to the target: iteration seconds x BSP rounds x the option's penalty / 3600."""
    c = case or TIME_CASE
    return c["iteration_s"] * c["rounds"] * c["penalty"] / 3600


def local_sgd_ms(case=None) -> float:
    """Milliseconds per round of local SGD: compute + exposed all-reduce / period."""
    c = case or LOCAL_CASE
    return c["compute_ms"] + c["exposed_ms"] / c["period"]


def gather_factor(case=None) -> float:
    """Bytes of all-gathered top-k payloads over a dense ring all-reduce's, per the case."""
    c = case or GATHER_CASE
    ratio = 2 * c["fraction"]  # a value and an index per kept coordinate, against one value per coordinate
    return c["workers"] * ratio / 2


def check_time_to_target(answer) -> bool:
    """Exercise 1: hours to the target."""
    return check_number("hours to the target", answer, hours_to_target(), rel=0.01,
                        hint="time = iteration seconds x BSP's rounds x the penalty.")


def check_local_sgd(answer) -> bool:
    """Exercise 2: milliseconds per round with local SGD."""
    return check_number("ms per round", answer, local_sgd_ms(), rel=0.01,
                        hint="The compute stays; the exposed all-reduce comes once every H rounds.")


def check_gather_factor(answer) -> bool:
    """Exercise 3: top-k's bytes on the wire over the dense all-reduce's."""
    return check_number("wire factor", answer, gather_factor(), rel=0.02,
                        hint="An all-gather moves (p-1) payloads of r n bytes to each worker, a ring all-reduce "
                             "2 (p-1)/p n: the ratio is p r / 2, with r = 2 x 1%.")
