"""Tensor parallelism: one layer's matrices split across the t ranks of a group (Megatron-LM).

Shoeybi et al. (Megatron-LM, 2019) split a transformer's MLP and attention so that each needs one
all-reduce forward and one backward, with two conjugate operators around a split region:

* ``f`` = :func:`copy_to`: identity forward; backward, all-reduce of the input gradient (each rank
  saw the whole input but holds only part of the matrix, so its input gradient is a partial sum);
* ``g`` = :func:`reduce_from`: all-reduce forward (the ranks' partial outputs add up); identity
  backward.

A :class:`ColumnParallelLinear` keeps rows of W (output features) and produces its share of the
outputs; a :class:`RowParallelLinear` keeps the matching columns (input features) and adds the
partial products with g. Column then row (``f -> XA_r -> act -> (.)B_r -> g``) needs no
communication in between, because the activation acts on each output feature alone.

Sequence parallelism (Korthikanti et al., "Reducing Activation Recomputation in Large
Transformer Models", 2022) keeps the parts outside the split region (LayerNorm, dropout,
residual) cut along the sequence instead of replicated: f becomes an all-gather along the
sequence (:func:`gather_sequence`, whose backward is a reduce-scatter) and g a reduce-scatter
(:func:`scatter_sequence`, backward an all-gather). On a ring an all-reduce *is* a
reduce-scatter plus an all-gather, so the bytes are the same; the activations held per rank
shrink by t.

Bytes (:func:`tp_bytes`): per transformer layer and micro-batch of b sequences of s positions
and hidden size h, two all-reduces of b s h values forward and two backward; a ring all-reduce of
n bytes over t ranks sends 2 (t-1)/t n per rank, so 4 (t-1)/t b s h values each way.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class _CopyTo(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return ctx.group.all_reduce(grad.contiguous().clone()), None


class _ReduceFrom(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return group.all_reduce(x.contiguous().clone())

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def _seq_first(x: torch.Tensor, dim: int) -> torch.Tensor:
    return x.transpose(0, dim).contiguous()


def _all_gather(group, x, dim):
    piece = _seq_first(x, dim)
    full = group.all_gather(piece.view(-1), piece.numel() * group.size)
    return full.view(piece.shape[0] * group.size, *piece.shape[1:]).transpose(0, dim)


def _reduce_scatter(group, x, dim):
    whole = _seq_first(x, dim)
    if whole.shape[0] % group.size:
        raise ValueError(f"sequence parallelism cuts the {whole.shape[0]} positions over {group.size} ranks; "
                         f"the sequence length must be a multiple of the tensor-parallel size")
    mine = group.reduce_scatter(whole.view(-1).clone())
    return mine.view(whole.shape[0] // group.size, *whole.shape[1:]).transpose(0, dim)


class _GatherSequence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group, dim, reduce_grad):
        ctx.group, ctx.dim, ctx.reduce_grad = group, dim, reduce_grad
        return _all_gather(group, x, dim).contiguous()

    @staticmethod
    def backward(ctx, grad):
        if ctx.reduce_grad:
            return _reduce_scatter(ctx.group, grad, ctx.dim).contiguous(), None, None, None
        return grad.chunk(ctx.group.size, dim=ctx.dim)[ctx.group.index].contiguous(), None, None, None


class _SplitSequence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group, dim):
        ctx.group, ctx.dim = group, dim
        return x.chunk(group.size, dim=dim)[group.index].contiguous()

    @staticmethod
    def backward(ctx, grad):
        return _all_gather(ctx.group, grad, ctx.dim).contiguous(), None, None


class _ScatterSequence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group, dim):
        ctx.group, ctx.dim = group, dim
        return _reduce_scatter(group, x, dim).contiguous()

    @staticmethod
    def backward(ctx, grad):
        return _all_gather(ctx.group, grad, ctx.dim).contiguous(), None, None


def copy_to(group, x: torch.Tensor) -> torch.Tensor:
    """Megatron's f: identity forward, all-reduce (sum) of the gradient backward."""
    return x if group.size == 1 else _CopyTo.apply(x, group)


def reduce_from(group, x: torch.Tensor) -> torch.Tensor:
    """Megatron's g: all-reduce (sum) forward, identity backward."""
    return x if group.size == 1 else _ReduceFrom.apply(x, group)


def gather_sequence(group, x: torch.Tensor, dim: int = 1, reduce_grad: bool = True) -> torch.Tensor:
    """Sequence parallelism's f: all-gather the sequence shards along ``dim`` (in group order)
    forward, reduce-scatter of the gradient backward. With ``reduce_grad=False`` (what follows is
    replicated, so every rank has the same whole gradient) backward keeps the rank's shard."""
    return x if group.size == 1 else _GatherSequence.apply(x, group, dim, reduce_grad)


def split_sequence(group, x: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """Enter a sequence-parallel region from a replicated tensor: keep this rank's shard along
    ``dim`` forward (nothing sent), all-gather the gradient backward."""
    if x.shape[dim] % group.size:
        raise ValueError(f"sequence parallelism cuts the {x.shape[dim]} positions over {group.size} ranks; "
                         f"the sequence length must be a multiple of the tensor-parallel size")
    return x if group.size == 1 else _SplitSequence.apply(x, group, dim)


def scatter_sequence(group, x: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """Sequence parallelism's g: reduce-scatter along ``dim`` forward (rank i keeps shard i of the
    sum), all-gather of the gradient backward."""
    return x if group.size == 1 else _ScatterSequence.apply(x, group, dim)


def chunk_index(n: int, group) -> torch.Tensor:
    """Indices of this rank's chunk of n features (n must divide by the group size)."""
    if n % group.size:
        raise ValueError(f"{n} features do not split over {group.size} tensor-parallel ranks")
    k = n // group.size
    return torch.arange(group.index * k, (group.index + 1) * k)


class ColumnParallelLinear(nn.Module):
    """Rows ``rows`` of a Linear's weight and bias (a share of its outputs); the input goes through
    f (or, sequence-parallel, is all-gathered along the sequence). ``slices`` maps each parameter
    to (dim, indices) of the full layer's."""

    def __init__(self, group, weight, bias, rows: torch.Tensor, sequence_parallel: bool = False):
        super().__init__()
        self.group, self.sequence_parallel = group, sequence_parallel
        self.weight = nn.Parameter(weight.detach()[rows].clone())
        self.bias = None if bias is None else nn.Parameter(bias.detach()[rows].clone())
        self.slices = {"weight": (0, rows), "bias": (0, rows)}

    @classmethod
    def from_linear(cls, group, linear: nn.Linear, sequence_parallel: bool = False) -> "ColumnParallelLinear":
        """This rank's output columns of ``linear`` (a chunk of out_features)."""
        return cls(group, linear.weight, linear.bias, chunk_index(linear.out_features, group), sequence_parallel)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x W_r^T + b_r after ``f`` (or a sequence all-gather): this rank's output columns."""
        x = gather_sequence(self.group, x) if self.sequence_parallel else copy_to(self.group, x)
        return F.linear(x, self.weight, self.bias)


class RowParallelLinear(nn.Module):
    """Columns ``cols`` of a Linear's weight (a share of its inputs); the partial outputs are added
    by g (or reduce-scattered along the sequence), then the whole bias, kept on every rank, once."""

    def __init__(self, group, weight, bias, cols: torch.Tensor, sequence_parallel: bool = False):
        super().__init__()
        self.group, self.sequence_parallel = group, sequence_parallel
        self.weight = nn.Parameter(weight.detach()[:, cols].clone())
        self.bias = None if bias is None else nn.Parameter(bias.detach().clone())
        self.slices = {"weight": (1, cols), "bias": None}

    @classmethod
    def from_linear(cls, group, linear: nn.Linear, sequence_parallel: bool = False) -> "RowParallelLinear":
        """This rank's input rows of ``linear`` (a chunk of in_features)."""
        return cls(group, linear.weight, linear.bias, chunk_index(linear.in_features, group), sequence_parallel)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The partial x_r W_r^T summed by ``g`` (or reduce-scattered over the sequence), plus b."""
        y = F.linear(x, self.weight)
        y = scatter_sequence(self.group, y) if self.sequence_parallel else reduce_from(self.group, y)
        return y if self.bias is None else y + self.bias


def tp_bytes(b: int, s: int, h: int, t: int, bytes_per_value: int = 4, sequence_parallel: bool = False) -> dict:
    """Bytes one rank sends per transformer layer and micro-batch, forward and backward: two
    all-reduces of b s h values each way (Megatron), or, sequence-parallel, two all-gather +
    reduce-scatter pairs, the same 2 (t-1)/t per all-reduce on a ring."""
    n = b * s * h * bytes_per_value
    each_way = 2 * 2 * (t - 1) / t * n
    return {"forward": each_way, "backward": each_way, "sequence_parallel": sequence_parallel}
