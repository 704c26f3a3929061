"""Scheduling: in what order messages go (WFBP, tensor fusion, priorities). Planned."""
from __future__ import annotations

from ..spec import Registry

SCHEDULES = Registry("schedule")
SCHEDULES.plan(["wfbp", "fusion", "mg_wfbp", "bytescheduler"], "scheduling chapter, a later issue")


def get(spec):
    """A schedule from a spec such as "wfbp+fusion(mb=1)"; None means: all gradients at once after backward."""
    return None if spec in (None, "none") else SCHEDULES.build(spec)
