"""Small helpers shared by several chapters' figures: names of byte counts and durations."""
from __future__ import annotations


def bytes_name(n: float) -> str:
    """A byte count in GB, MB, kB or B, three significant digits."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.3g} B"


def seconds_name(t: float) -> str:
    """A duration in s, ms or us, three significant digits."""
    for unit, size in (("s", 1.0), ("ms", 1e-3)):
        if t >= size:
            return f"{t / size:.3g} {unit}"
    return f"{t * 1e6:.3g} us"

