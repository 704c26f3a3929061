"""Whether the Trainer runs a configuration as the advisor prints it, asked of the Trainer itself.

Every option of :class:`commlab.train.Trainer` is checked in its constructor, before any rank starts
(a dimension's registry checks its names, the synchronizer and the architecture the combination).
:func:`refusal` builds a Trainer with the configuration's ``sync``, ``arch``, ``compress`` and
``schedule`` on ``workers`` ranks, over a stand-in data set of one sample per worker and the digits
MLP's kind of model, and returns the Trainer's own message when it refuses, None when it accepts.
Nothing is trained. The checks that depend on the model (PowerSGD beside a schedule that cuts a
weight) are judged on that stand-in; the advisor's configurations have none of them.
"""
from __future__ import annotations

import functools

import torch

from ..data import Dataset
from ..train import Trainer

SPECS = ("sync", "arch", "compress", "schedule")


def _stand_in(workers: int) -> Dataset:
    x = torch.zeros(workers, 4)
    y = torch.zeros(workers, dtype=torch.long)
    return Dataset("stand-in", x, y, x[:1], y[:1], num_classes=2, input_shape=(4,))


@functools.lru_cache(maxsize=None)
def refusal(workers: int, sync: str, arch: str, compress: str, schedule: str) -> str | None:
    """The Trainer's message if it refuses these specs on ``workers`` ranks, else None."""
    try:
        Trainer(model="mlp", data=_stand_in(workers), workers=workers, batch_size=1, sync=sync, arch=arch,
                compress=compress, schedule=schedule, progress=False)
    except (ValueError, TypeError, NotImplementedError) as e:
        return str(e)
    return None
