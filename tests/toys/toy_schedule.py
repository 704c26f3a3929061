"""A toy schedule: one message per layer, the last layer's first (WFBP written again)."""
from commlab.schedule import Piece, Plan, Schedule, register_schedule

NAME = "per_layer"


class PerLayer(Schedule):
    """Each layer's whole gradient in a message of its own, in the order backward produces them."""
    name = NAME

    def plan(self, profile, comm_time=None):
        pieces = tuple(Piece(l, 0, b) for l, b in enumerate(profile.grad_bytes))
        return Plan(self.name, pieces, tuple((l,) for l in reversed(range(profile.layers))))


def register():
    register_schedule(PerLayer)
