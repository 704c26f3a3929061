"""What a rank's traffic is counted in: payload bytes and messages, sent and received.

A payload's bytes are its tensor's ``numel * element_size``, what would really cross the wire
(:func:`nbytes`); :class:`CommStats` holds one rank's counters (``comm.stats``).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import torch


@dataclass
class CommStats:
    """Per-rank traffic counters: payload bytes and message counts."""

    bytes_sent: int = 0
    bytes_recv: int = 0
    msgs_sent: int = 0
    msgs_recv: int = 0

    def reset(self) -> None:
        """Set every counter back to 0."""
        for f in fields(self):
            setattr(self, f.name, 0)

    def snapshot(self) -> "CommStats":
        """A copy of the counters now (subtract two snapshots for the traffic between them)."""
        return CommStats(**{f.name: getattr(self, f.name) for f in fields(self)})

    def __sub__(self, other: "CommStats") -> "CommStats":
        return CommStats(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})


def nbytes(tensor: torch.Tensor) -> int:
    """Bytes on the wire for a tensor payload."""
    return tensor.numel() * tensor.element_size()
