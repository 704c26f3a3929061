"""Training models too large for one device: splitting the model, not only the data.

* :mod:`.group`: a set of ranks that talk among themselves (a layout's tp, dp or pp group);
* :mod:`.tensor`, :mod:`.tensor_layer`: tensor parallelism (Megatron-LM) and sequence parallelism;
* :mod:`.pipeline`: pipeline parallelism, GPipe and 1F1B schedules, the bubble;
* :mod:`.zero`: ZeRO stages 1-3, ``Trainer(arch="zero(stage=2)")``;
* :mod:`.experts`: a mixture-of-experts layer, its experts spread over ranks, all-to-all dispatch;
* :mod:`.configs`, :mod:`.planner`: real models (GPT-3 175B, LLaMA-2 70B, Megatron's 1T) and the
  memory, bytes and step time of a layout on a cluster, ``plan(...)``, ``candidates(...)``;
* :mod:`.layout`, :mod:`.stages`, :mod:`.training`: 3D layouts dp x tp x pp of the tiny
  transformer, ``Trainer(model="transformer", parallel="dp=2,tp=2,pp=2", workers=8)``.
"""
from __future__ import annotations

from ..arch import ARCHITECTURES
from .configs import MODELS, ModelConfig
from .experts import ExpertParallelMoE, MoE, all_to_all
from .layout import Layout
from .planner import PUBLISHED, LayoutEstimate, candidates, plan
from .training import join, layout_for, train_rank
from .zero import Zero, ZeroExchange, zero_bytes, zero_memory

ARCHITECTURES.register(Zero.name, Zero)

__all__ = ["ExpertParallelMoE", "Layout", "MODELS", "MoE", "ModelConfig", "PUBLISHED", "LayoutEstimate", "Zero", "ZeroExchange",
           "all_to_all", "candidates", "join", "layout_for", "plan", "train_rank", "zero_bytes", "zero_memory"]
