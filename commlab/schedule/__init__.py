"""Scheduling: in what order gradients travel, overlapped with what (WFBP, fusion, MG-WFBP,
ByteScheduler, P3).

A schedule is a policy (:mod:`.policies`): from a model's layers (:mod:`.profile`) to the pieces
and messages its gradients travel in. :mod:`.dispatch` times a plan on one worker's compute and
communication streams; :mod:`.engine` runs it for real (backward hooks and a communication thread
per rank); :mod:`commlab.sim` simulates whole iterations on clusters of thousands of GPUs.
A new policy is a :class:`Schedule` subclass and one line, :func:`register_schedule`.
"""
from __future__ import annotations

from ..spec import Registry
from .dispatch import Message, dispatch, iteration
from .policies import MB, POLICIES, Piece, Plan, Schedule, baseline
from .profile import Profile, model_profile
from .search import Search

SCHEDULES = Registry("schedule")


def register_schedule(cls) -> None:
    """The one line that adds a schedule: a :class:`Schedule` subclass with ``plan(profile,
    comm_time)``, built from specs by its ``name``; both executors run it (``Trainer(schedule=name)``
    and ``sim.iteration(..., schedule=name)``). ValueError for a name already taken or a class
    that is not a Schedule."""
    if not (isinstance(cls, type) and issubclass(cls, Schedule)) or not cls.name.isidentifier() \
            or cls.name != cls.name.lower() or cls.name in ("schedule", "none"):
        raise ValueError(f"a schedule is a Schedule subclass with a lower-case identifier as its own name, got {cls!r}")
    if cls.name in SCHEDULES.builders:
        raise ValueError(f"schedule {cls.name!r} is already registered; registered: {', '.join(SCHEDULES.names())}")
    SCHEDULES.register(cls.name, cls)


for _cls in (*POLICIES, Search):
    register_schedule(_cls)


def get(spec):
    """A schedule from a spec such as "wfbp" or "fusion(mb=1)"; None (or "none") means no
    schedule: every gradient in one message after backward."""
    if spec is None or spec == "none":
        return None
    if isinstance(spec, Schedule):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"schedule must be a name such as 'wfbp', a Schedule or None, got {spec!r}")
    return SCHEDULES.build(spec)


__all__ = ["SCHEDULES", "get", "register_schedule", "Schedule", "Plan", "Piece", "Profile", "model_profile", "Message", "dispatch",
           "iteration", "baseline", "MB"]
