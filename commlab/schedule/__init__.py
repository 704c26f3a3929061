"""Scheduling: in what order gradients travel, overlapped with what (WFBP, fusion, MG-WFBP,
ByteScheduler, P3).

A schedule is a policy (:mod:`.policies`): from a model's layers (:mod:`.profile`) to the pieces
and messages its gradients travel in. :mod:`.dispatch` times a plan on one worker's compute and
communication streams; :mod:`.engine` runs it for real (backward hooks and a communication thread
per rank); :mod:`commlab.sim` simulates whole iterations on clusters of thousands of GPUs.
"""
from __future__ import annotations

from ..spec import Registry
from .dispatch import Message, dispatch, iteration
from .policies import MB, POLICIES, Piece, Plan, Schedule, baseline
from .profile import Profile, model_profile
from .search import Search

SCHEDULES = Registry("schedule")
for _cls in (*POLICIES, Search):
    SCHEDULES.register(_cls.name, _cls)


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


__all__ = ["SCHEDULES", "get", "Schedule", "Plan", "Piece", "Profile", "model_profile", "Message", "dispatch",
           "iteration", "baseline", "MB"]
