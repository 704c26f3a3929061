"""One rank's piece of the tiny transformer under a 3D layout: its pipeline stage, tensor-split.

:func:`transformer_stage` cuts a built :class:`commlab.models.TinyTransformer` (every rank builds
the same one from the run's seed, so the pieces start from single-process training's weights):

* pipeline: the encoder layers are cut into ``pp`` balanced runs of consecutive layers
  (:func:`commlab.arch.chunks.bounds`); the first stage also holds the token and position
  embeddings, the last the mean pooling, the final LayerNorm and the classifier head;
* tensor: each encoder layer becomes a
  :class:`~commlab.parallel.tensor_layer.ParallelTransformerLayer` over the stage's ``tp`` group
  (attention heads and the MLP split, two all-reduces of b s h values forward and two backward);
  embeddings, final norm and head are replicated over the tp ranks, whose gradients for them are
  equal (every tp rank sees the same activations), so nothing extra is sent for them;
* sequence parallelism (optional): after the embeddings each tp rank keeps its shard of the
  positions, the layers run sequence-parallel, the stages pass shards of s/t positions (t times
  fewer bytes across each boundary), and the last stage gathers the positions before pooling; the
  LayerNorms' partial gradients are then summed over the tp group
  (:func:`~commlab.parallel.tensor_layer.sync_replicated_grads`).

``stage.parameters()`` are the rank's trainable tensors; :func:`stage_layers` says how many encoder
layers each stage holds.
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from ..arch.chunks import bounds
from .tensor import gather_sequence, split_sequence
from .tensor_layer import ParallelTransformerLayer


def stage_layers(layers: int, pp: int) -> list[tuple[int, int]]:
    """[start, stop) of the encoder layers of each of the ``pp`` stages."""
    return bounds(layers, pp)


class TransformerStage(nn.Module):
    """Stage ``s`` of ``pp`` of a TinyTransformer: (tokens or hidden states) -> (hidden states or logits)."""

    def __init__(self, full: nn.Module, s: int, pp: int, tp_group, sequence_parallel: bool = False):
        super().__init__()
        self.group, self.sequence_parallel = tp_group, sequence_parallel
        layers = full.encoder.layers
        start, stop = stage_layers(len(layers), pp)[s]
        self.first, self.last, self.total_layers = s == 0, s == pp - 1, len(layers)
        self.tok = copy.deepcopy(full.tok) if self.first else None
        self.pos = copy.deepcopy(full.pos) if self.first else None
        self.layers = nn.ModuleList(ParallelTransformerLayer.from_layer(tp_group, layers[i], sequence_parallel)
                                    for i in range(start, stop))
        self.norm = copy.deepcopy(full.norm) if self.last else None
        self.head = copy.deepcopy(full.head) if self.last else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Embed on the first stage, run this stage's layers, pool and classify on the last."""
        if self.first:
            x = self.tok(x) + self.pos(torch.arange(x.shape[1], device=x.device))
            if self.sequence_parallel:
                x = split_sequence(self.group, x)
        for layer in self.layers:
            x = layer(x)
        if self.last:
            if self.sequence_parallel:
                x = gather_sequence(self.group, x, reduce_grad=False)
            x = self.head(self.norm(x.mean(dim=1)))
        return x


def transformer_stage(full: nn.Module, s: int, pp: int, tp_group, sequence_parallel: bool = False) -> TransformerStage:
    """Stage ``s`` of ``pp`` of ``full`` (a TinyTransformer), its layers split over ``tp_group``
    (sequence-parallel: activations between layers and stages cut along the sequence)."""
    if not hasattr(full, "encoder") or not hasattr(full, "tok"):
        raise ValueError(f"a parallel layout splits the tiny transformer (model='transformer'), got "
                         f"{type(full).__name__}")
    return TransformerStage(full, s, pp, tp_group, sequence_parallel)


def shape_of(full: nn.Module) -> dict:
    """The sizes a layout is checked against: layers, heads, hidden size, MLP size, positions."""
    layer = full.encoder.layers[0]
    return dict(layers=len(full.encoder.layers), heads=layer.self_attn.num_heads, hidden=layer.linear1.in_features,
                ffn=layer.linear1.out_features, seq=full.pos.num_embeddings)
