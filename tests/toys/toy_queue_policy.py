"""A toy queue policy: first in, first out, written again (head-of-line blocking included)."""
from commlab.infra.queue_policies import register_queue_policy

NAME = "fifo_again"


def decide(state):
    """Start the head of the queue while it fits; nobody behind a head that does not fit starts."""
    while state.waiting:
        where = state.place(state.waiting[0])
        if where is None:
            return
        state.start(state.waiting[0], where)


def register():
    return register_queue_policy(NAME, decide)
