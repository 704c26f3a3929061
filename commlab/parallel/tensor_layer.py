"""A tensor-parallel transformer layer: attention heads and the MLP split over t ranks (Megatron-LM).

:class:`ParallelTransformerLayer` is a pre-norm encoder layer (``nn.TransformerEncoderLayer`` with
``norm_first=True``, ``batch_first=True``, no dropout, ReLU)::

    x = x + out_proj(attention(qkv(norm1(x))))          qkv: column-parallel, by heads
    x = x + linear2(relu(linear1(norm2(x))))            linear1 column-, linear2 row-parallel

Rank r of t keeps heads [r a/t, (r+1) a/t): the rows of Q, K and V that belong to them (in
``in_proj_weight``, rows [0, h) are Q, [h, 2h) K, [2h, 3h) V, each head a block of h/a rows), so
it computes those heads' attention with no communication; ``out_proj`` keeps the matching columns
(row-parallel); ``linear1`` a quarter-block of rows, ``linear2`` the matching columns. Per layer:
two all-reduces forward (after attention, after the MLP) and two backward (the gradients of the
two column inputs): :func:`commlab.parallel.tensor.tp_bytes`. The LayerNorms and the row layers'
biases are replicated.

With ``sequence_parallel=True`` (Korthikanti et al., 2022) the layer takes and returns the rank's
shard of the sequence, (B, S/t, H); the LayerNorms run on the shard, the all-reduces become
all-gather / reduce-scatter pairs, and the replicated parameters' gradients are partial sums that
:func:`sync_replicated_grads` adds up.

``layer.slices()`` maps each of its parameters to (full parameter name, dim, indices) of the
unsplit layer's: how tests compare gradients, and how a run's shards are joined again.
"""
from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from ..flat import flatten, unflatten_into
from .tensor import ColumnParallelLinear, RowParallelLinear, chunk_index


def check_layer(layer: nn.TransformerEncoderLayer, t: int) -> None:
    """Refuse a layer this module cannot split over t ranks, naming the valid tensor-parallel sizes."""
    if not getattr(layer, "norm_first", False) or layer.activation_relu_or_gelu != 1:
        raise ValueError("tensor parallelism here splits pre-norm (norm_first=True) layers with ReLU")
    heads, h, f = layer.self_attn.num_heads, layer.linear1.in_features, layer.linear1.out_features
    valid = [k for k in range(1, heads + 1) if heads % k == 0 and h % k == 0 and f % k == 0]
    if t not in valid:
        raise ValueError(f"tp={t} must divide the {heads} heads, the hidden size {h} and the MLP's {f}; valid tp: "
                         f"{', '.join(map(str, valid))}")


class ParallelTransformerLayer(nn.Module):
    """A pre-norm encoder layer whose heads and MLP are split over the group's t ranks."""
    def __init__(self, group, layer: nn.TransformerEncoderLayer, sequence_parallel: bool = False):
        super().__init__()
        check_layer(layer, group.size)
        self.group, self.sequence_parallel = group, sequence_parallel
        attn = layer.self_attn
        h = attn.embed_dim
        self.heads, self.head_dim = attn.num_heads // group.size, h // attn.num_heads
        mine = chunk_index(h, group)  # this rank's heads' rows of Q (and of K, V after h, 2h)
        sp = sequence_parallel
        self.norm1, self.norm2 = copy.deepcopy(layer.norm1), copy.deepcopy(layer.norm2)
        self.qkv = ColumnParallelLinear(group, attn.in_proj_weight, attn.in_proj_bias,
                                        torch.cat([mine, mine + h, mine + 2 * h]), sp)
        self.out_proj = RowParallelLinear.from_linear(group, attn.out_proj, sp)
        self.linear1 = ColumnParallelLinear.from_linear(group, layer.linear1, sp)
        self.linear2 = RowParallelLinear.from_linear(group, layer.linear2, sp)
        self._full = {"qkv": "self_attn.in_proj_", "out_proj": "self_attn.out_proj.", "linear1": "linear1.",
                      "linear2": "linear2.", "norm1": "norm1.", "norm2": "norm2."}

    @classmethod
    def from_layer(cls, group, layer: nn.TransformerEncoderLayer,
                   sequence_parallel: bool = False) -> "ParallelTransformerLayer":
        """The tensor-parallel form of ``layer`` on ``group``."""
        return cls(group, layer, sequence_parallel)

    def _attention(self, x: torch.Tensor) -> torch.Tensor:
        qkv = self.qkv(x)  # (B, S, 3 h/t): this rank's heads
        b, s, _ = qkv.shape
        q, k, v = (z.reshape(b, s, self.heads, self.head_dim).transpose(1, 2) for z in qkv.chunk(3, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        out = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, s, self.heads * self.head_dim)
        return self.out_proj(out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x + attention(norm1(x)), then + linear2(relu(linear1(norm2(x))))."""
        x = x + self._attention(self.norm1(x))
        return x + self.linear2(F.relu(self.linear1(self.norm2(x))))

    def slices(self) -> list[tuple[nn.Parameter, str, int | None, torch.Tensor | None]]:
        """(parameter, full layer's parameter name, dim, indices): the parameter is
        ``full.index_select(dim, indices)``, or the whole full parameter when dim is None."""
        out = []
        for part, prefix in self._full.items():
            module = getattr(self, part)
            cut = getattr(module, "slices", {})
            for name, p in module.named_parameters():
                where = cut.get(name)
                out.append((p, prefix + name, *(where if where is not None else (None, None))))
        return out

    def replicated(self) -> list[nn.Parameter]:
        """The parameters every rank holds whole: the LayerNorms and the row layers' biases."""
        return [p for p, _, dim, _ in self.slices() if dim is None]


def sync_replicated_grads(module: nn.Module, group) -> None:
    """Sum the gradients of the replicated parameters of ``module``'s sequence-parallel layers over
    the group (each rank saw only its shard of the sequence, so each holds a partial sum)."""
    params = [p for layer in module.modules() if isinstance(layer, ParallelTransformerLayer)
              and layer.sequence_parallel for p in layer.replicated()]
    if params and group.size > 1:
        flat = flatten(p.grad for p in params)
        group.all_reduce(flat)
        unflatten_into(flat, [p.grad for p in params])
