"""Training models too large for one device: splitting the model, not only the data.

* :mod:`.group`: a set of ranks that talk among themselves (a layout's tp, dp or pp group);
* :mod:`.tensor`, :mod:`.tensor_layer`: tensor parallelism (Megatron-LM) and sequence parallelism;
* :mod:`.pipeline`: pipeline parallelism, GPipe and 1F1B schedules, the bubble;
* :mod:`.layout`, :mod:`.stages`, :mod:`.training`: 3D layouts dp x tp x pp of the tiny
  transformer, ``Trainer(model="transformer", parallel="dp=2,tp=2,pp=2", workers=8)``.
"""
from __future__ import annotations

from .layout import Layout
from .training import join, layout_for, train_rank

__all__ = ["Layout", "join", "layout_for", "train_rank"]
