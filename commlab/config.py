"""The Trainer's options, :class:`Config`, checked field by field when it is built.

A mistyped option should fail at once, naming the option, the value given and what is
valid, before any rank starts (a rank that dies on ``lr=nan`` ten seconds into a Gloo run
tells the user much less). Every field has one rule in :data:`RULES`; ``Config(...)`` runs
them all in ``__post_init__`` and raises ValueError (TypeError for a value of the wrong
kind) on the first bad field, in field order::

    Config(lr=float("nan"))   ->  ValueError: Trainer option lr=nan is out of range; valid: a finite number > 0

``bool`` is not accepted where an integer or a number is meant (``workers=True`` is a
slip, not one worker): like a string or None there, it is a TypeError; a number out of range
(or a float where an integer is meant) is a ValueError. The strings of the dimensions (``sync``, ``arch``, ``compress``,
``reply_compress``, ``schedule``, ``parallel``) are left to their registries, which know their names and
arguments; ``model`` and ``data`` names are checked by the builders that load them. What
this module checks is the rest: numbers, ranges, choices and types.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from . import checks
from .data import Dataset
from .runtime import RUNTIMES
from .spec import COMPRESS_PER

SPLITS = ("iid", "dirichlet")


@dataclass
class Config:
    """One Trainer run's options (see :class:`commlab.train.Trainer`); checked on construction."""

    model: object = "mlp"
    data: str = "digits"
    workers: int = 4
    sync: str = "bsp"
    arch: str = "native"
    compress: object = None
    reply_compress: object = None
    compress_per: str = "bucket"
    schedule: object = None
    parallel: object = None
    runtime: str = "threads"
    seed: int = 0
    batch_size: int = 32
    lr: float = 0.1
    momentum: float = 0.0
    weight_decay: float = 0.0
    split: str = "iid"
    dirichlet_alpha: float = 1.0
    eval_every: int = 10
    progress: bool = True
    timeout: float = 120.0
    data_kw: dict = field(default_factory=dict)
    model_kw: dict = field(default_factory=dict)

    def __post_init__(self):
        self.check()

    def check(self) -> "Config":
        """Check every field; ValueError/TypeError naming the first bad one. Returns self."""
        for f in fields(self):
            rule = RULES.get(f.name)
            if rule is not None:
                rule(f.name, getattr(self, f.name))
        return self


# ----------------------------------------------------------------------------- rules
def _bad(name: str, value, valid: str, kind=ValueError):
    what = "is out of range" if kind is ValueError else "has the wrong type"
    return kind(f"Trainer option {name}={value!r} {what}; valid: {valid}")


def _is_real(v) -> bool:
    return checks.is_number(v, numpy=True) and math.isfinite(v)


def _a_number(name, v, valid: str) -> None:
    """TypeError unless ``v`` is a number at all (a bool, a string or None is not)."""
    if not checks.is_number(v, numpy=True):
        raise _bad(name, v, valid, TypeError)


def positive_int(name, v):
    """Rule: an integer >= 1 (TypeError for a non-number, ValueError otherwise)."""
    _a_number(name, v, "an integer >= 1")
    if not (checks.is_int(v, numpy=True) and v >= 1):
        raise _bad(name, v, "an integer >= 1")


def any_int(name, v):
    """Rule: any integer (TypeError for a non-number, ValueError for a fraction)."""
    _a_number(name, v, "an integer")
    if not checks.is_int(v, numpy=True):
        raise _bad(name, v, "an integer")


def positive(name, v):
    """Rule: a finite number > 0 (TypeError for a non-number, ValueError otherwise)."""
    _a_number(name, v, "a finite number > 0")
    if not (_is_real(v) and v > 0):
        raise _bad(name, v, "a finite number > 0")


def non_negative(name, v):
    """Rule: a finite number >= 0 (TypeError for a non-number, ValueError otherwise)."""
    _a_number(name, v, "a finite number >= 0")
    if not (_is_real(v) and v >= 0):
        raise _bad(name, v, "a finite number >= 0")


def unit_interval(name, v):
    """[0, 1): momentum 1 never forgets a gradient (the step grows without bound)."""
    _a_number(name, v, "a finite number in [0, 1)")
    if not (_is_real(v) and 0 <= v < 1):
        raise _bad(name, v, "a finite number in [0, 1)")


def boolean(name, v):
    """Rule: True or False (TypeError otherwise; 0 and 1 are not booleans)."""
    if not isinstance(v, bool):
        raise _bad(name, v, "True or False", TypeError)


def a_dict(name, v):
    """Rule: a dict of keyword arguments (TypeError otherwise)."""
    if not isinstance(v, dict):
        raise _bad(name, v, "a dict of keyword arguments, such as {}", TypeError)


def split(name, v):
    """Rule: one of :data:`SPLITS`, the ways the data set is divided among workers."""
    if v not in SPLITS:
        raise ValueError(f"Trainer option {name}={v!r} is not known; valid: {', '.join(SPLITS)}")


def compress_per(name, v):
    """Rule: one of :data:`commlab.spec.COMPRESS_PER`, how compressed gradients are cut into messages
    (whether a combination can cut them so is the rulebook's, :mod:`commlab.rules`)."""
    if not isinstance(v, str) or v not in COMPRESS_PER:
        raise ValueError(f"Trainer option {name}={v!r} is not known; valid: {', '.join(COMPRESS_PER)}")


def runtime(name, v):
    """Rule: one of :data:`RUNTIMES`; ``'torchrun'`` gets a hint to pass 'gloo' or 'nccl' instead."""
    if v in RUNTIMES and isinstance(v, str):
        return
    hint = ""
    if v == "torchrun":
        hint = ("; under torchrun pass runtime='gloo' or 'nccl' and launch the script with torchrun "
                "(commlab then takes RANK, WORLD_SIZE and LOCAL_RANK from the environment)")
    raise ValueError(f"Trainer option {name}={v!r} is not known; valid runtimes: {', '.join(RUNTIMES)}{hint}")


def model(name, v):
    """Rule: a non-empty model name, or a callable dataset -> nn.Module (TypeError otherwise)."""
    if not ((isinstance(v, str) and v) or callable(v)):
        raise _bad(name, v, "a model name such as 'mlp', or a function dataset -> nn.Module", TypeError)


def data(name, v):
    """Rule: a non-empty data set name, or a :class:`commlab.data.Dataset` (TypeError otherwise)."""
    if not ((isinstance(v, str) and v) or isinstance(v, Dataset)):
        raise _bad(name, v, "a data set name such as 'digits', or a commlab.data.Dataset", TypeError)


RULES = {
    "model": model, "data": data, "workers": positive_int, "runtime": runtime, "seed": any_int,
    "batch_size": positive_int, "lr": positive, "momentum": unit_interval, "weight_decay": non_negative,
    "split": split, "compress_per": compress_per, "dirichlet_alpha": positive, "eval_every": positive_int,
    "progress": boolean, "timeout": positive, "data_kw": a_dict, "model_kw": a_dict,
}
