"""A toy synchronizer: bulk synchronous SGD written again (a gradient, one exchange step)."""
from commlab.sync import register_sync
from commlab.sync.base import Synchronizer

NAME = "bsp_again"


class BSPAgain(Synchronizer):
    """Every step: this worker's gradient, averaged over the workers by the exchange, applied."""
    name = NAME
    schedulable = True

    def round(self, worker):
        loss = worker.gradient()
        worker.exchange.step(worker.model, worker.optimizer)
        return {"loss": loss}


def register():
    register_sync(BSPAgain)
