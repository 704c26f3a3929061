"""Check functions for the chapters' exercises.

Each chapter has a module (``ch00``, ``ch01``, ...). A check prints what it found and
returns True or False; it never raises on a wrong answer, so a notebook keeps running.
``answer=None`` reports that the exercise is still open. Messages are broken into lines of
at most :data:`WIDTH` characters, so a hint reads without scrolling in the book's column.
"""
from __future__ import annotations

import math
import textwrap

WIDTH = 88


def say(message: str) -> None:
    """Print a check's message, its lines broken at :data:`WIDTH` characters."""
    print(textwrap.fill(message.rstrip(), WIDTH, break_long_words=False, break_on_hyphens=False))


def check_number(name: str, answer, expected: float, rel: float = 0.02, hint: str = "") -> bool:
    """Compare a numeric answer with the expected value within a relative tolerance."""
    if answer is None:
        say(f"{name}: not answered yet. {hint}")
        return False
    try:
        value = float(answer)
    except (TypeError, ValueError):
        print(f"{name}: expected a number, got {answer!r}")
        return False
    if math.isclose(value, expected, rel_tol=rel, abs_tol=1e-12):
        print(f"{name}: correct ({value:.4g}).")
        return True
    near = f"within {rel * 100:.2g}% of the expected value" if rel >= 1e-4 else "the expected value"  # exact counts
    say(f"{name}: not yet: {value:.4g} is not {near}. {hint}")
    return False


def check_function(name: str, fn, trial) -> bool:
    """Run ``trial(fn)``, which raises AssertionError with a message on a wrong result."""
    if fn is None:
        print(f"{name}: not answered yet.")
        return False
    try:
        trial(fn)
    except AssertionError as e:
        say(f"{name}: not yet: {e}")
        return False
    except Exception as e:  # the reader's code failed: show why, keep the notebook alive
        say(f"{name}: your function raised {type(e).__name__}: {e}")
        return False
    print(f"{name}: correct.")
    return True
