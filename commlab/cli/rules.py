"""``python -m commlab rules``: the tables of allowed combinations of sync, arch, compress and
schedule (:func:`commlab.rules.markdown`), drawn from what each component declares."""
from __future__ import annotations

from .. import rules

NAME = "rules"


def add(sub, fmt) -> None:
    """The ``rules`` subcommand (no flags)."""
    sub.add_parser(NAME, help="which combinations of sync, arch, compress and schedule run",
                   description="The tables of allowed combinations, drawn from what each component declares "
                               "(commlab.rules; docs/architecture.md shows them).")


def run(p, a) -> int:
    """Print the tables."""
    print(rules.markdown(), end="")
    return 0
