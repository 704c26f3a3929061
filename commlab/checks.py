"""One rule per kind of value a public function takes, so that a new function gets the house rule
by using it: bad input raises before any work starts, naming the argument, the value and what is
valid. A wrong type is a TypeError, a value out of range a ValueError. ``where`` (the function's
name) prefixes the message.

* :func:`is_int`: the one test of "an integer": an int that is not a bool (numpy's integers too
  where asked); :func:`integer` raises a ValueError in one of the two wordings the project uses;
* :func:`is_number`: the one test of "a number": an int or a float, never a bool;
* :func:`count`: an integer (never a bool) within [low, high];
* :func:`number`: a real, finite number (never a bool or a string) within a range, each end open
  or closed; :func:`positive` and :func:`fraction` are its two commonest ranges;
* :func:`choice`: one of a fixed set of names;
* :func:`output_path`: a file that can be written where it is asked for, with an allowed suffix.
"""
from __future__ import annotations

import math
import numbers
import os


def _prefix(where: str) -> str:
    return f"{where}: " if where else ""


def is_int(value, numpy: bool = False) -> bool:
    """True if ``value`` is an int and not a bool (True is an int to Python, never a count here);
    ``numpy=True`` also admits numpy's integers (any :class:`numbers.Integral`)."""
    return isinstance(value, numbers.Integral if numpy else int) and not isinstance(value, bool)


def is_number(value, numpy: bool = False) -> bool:
    """True if ``value`` is an int or a float and not a bool; ``numpy=True`` also admits numpy's
    numbers (any :class:`numbers.Real`). Finite or not, in range or not, is the caller's rule."""
    return isinstance(value, numbers.Real if numpy else (int, float)) and not isinstance(value, bool)


def int_range(low: int, high: int | None = None) -> str:
    """The words for a valid integer: "an integer >= 1", "an integer in 0..7"."""
    return f"an integer >= {low}" if high is None else f"an integer in {low}..{high}"


def integer(name: str, value, low: int = 1, high: int | None = None, *, where: str = "", got: bool = False,
            numpy: bool = False) -> int:
    """``value`` if :func:`is_int` and low <= value <= high, else a ValueError (a wrong type too):
    "where: name=value must be an integer >= low", or with ``got`` "where: name must be an
    integer >= low, got value"; "an integer in low..high" when there is a ``high``."""
    if not is_int(value, numpy) or value < low or (high is not None and value > high):
        valid = int_range(low, high)
        raise ValueError(f"{_prefix(where)}{name} must be {valid}, got {value!r}" if got
                         else f"{_prefix(where)}{name}={value!r} must be {valid}")
    return value


def count(name: str, value, low: int = 1, high: int | None = None, where: str = "") -> int:
    """``value`` as an int, if it is an integer (a bool is not) with low <= value <= high."""
    valid = f"an integer >= {low}" + (f" and <= {high}" if high is not None else "")
    if not is_int(value, numpy=True):
        raise TypeError(f"{_prefix(where)}{name}={value!r} must be {valid}, not a {type(value).__name__}")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{_prefix(where)}{name}={value!r} must be {valid}")
    return int(value)


def number(name: str, value, low: float | None = None, high: float | None = None, *, low_open: bool = False,
           high_open: bool = False, unit: str = "", where: str = "") -> float:
    """``value`` as a float, if it is a finite real number (not a bool, not a string) in the range
    from ``low`` to ``high`` (None: unbounded), each end excluded when ``*_open``; ``unit`` names
    what it counts in the message ("seconds")."""
    lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
    hi = "" if high is None else f"{'<' if high_open else '<='} {high:g}"
    valid = ("a finite number" + (f" of {unit}" if unit else "") + (f" {lo}" if lo else "")
             + (" and" if lo and hi else "") + (f" {hi}" if hi else ""))
    if not is_number(value, numpy=True):
        raise TypeError(f"{_prefix(where)}{name}={value!r} must be {valid}, not a {type(value).__name__}")
    v = float(value)
    if (not math.isfinite(v) or (low is not None and (v <= low if low_open else v < low))
            or (high is not None and (v >= high if high_open else v > high))):
        raise ValueError(f"{_prefix(where)}{name}={value!r} must be {valid}")
    return v


def positive(name: str, value, unit: str = "", where: str = "") -> float:
    """A finite number > 0."""
    return number(name, value, 0, low_open=True, unit=unit, where=where)


def fraction(name: str, value, where: str = "") -> float:
    """A finite number in (0, 1]: an efficiency, a share."""
    return number(name, value, 0, 1, low_open=True, where=where)


def choice(name: str, value, valid, where: str = ""):
    """``value`` if it is one of ``valid``."""
    valid = list(valid)
    if isinstance(value, bool) or value not in valid:
        raise ValueError(f"{_prefix(where)}unknown {name} {value!r}; valid: {', '.join(map(str, valid))}")
    return value


def output_path(name: str, path, suffixes=(), where: str = "") -> str:
    """``path`` if a file can be written there: a string ending in one of ``suffixes`` (any when
    empty), in a directory that exists and is writable, and not itself a directory."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise TypeError(f"{_prefix(where)}{name}={path!r} must be a file path")
    path = os.fspath(path)
    if suffixes and os.path.splitext(path)[1].lower() not in suffixes:
        raise ValueError(f"{_prefix(where)}{name} {path!r} must end in {' or '.join(suffixes)}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"{_prefix(where)}{name} {path!r}: the folder {folder!r} does not exist")
    if os.path.isdir(path) or not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ValueError(f"{_prefix(where)}{name} {path!r} cannot be written")
    return path
