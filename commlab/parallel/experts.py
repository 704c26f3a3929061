"""Expert parallelism: a mixture-of-experts layer whose experts live on different ranks.

**Routing** (Switch Transformer, Fedus, Zoph, Shazeer, JMLR 2022: top-1; GShard, Lepikhin et al.,
ICLR 2021: top-2). A gate W_g (h -> E) gives each token the softmax p = softmax(W_g x) over E
experts; the token goes to its top-k experts with weights p_e (top-1) or p_e renormalised over
the two (top-2). Each expert takes at most its **capacity** C = ceil(capacity_factor k T / E) of
the T tokens of a rank, filled first choices first, in token order; a token over capacity is
dropped by that expert (it contributes 0; the residual around the layer carries the token on).
The output is y = sum_e weight_e expert_e(x). Switch's auxiliary loss E sum_e f_e P_e (f_e the
fraction of tokens whose first choice is e, P_e the mean gate probability) pushes toward balance.

**Expert parallelism** (GShard; DeepSpeed-MoE): with p ranks, rank r keeps experts [r E/p,
(r+1) E/p) and every rank routes its own tokens. *Dispatch*: each rank fills a buffer of
[E, C, h] (padded to capacity, so every message has a fixed size, as GShard does) and sends rank j
the slice of j's experts with an **all-to-all**; each expert runs on the p C tokens it received;
*combine*: a second all-to-all sends the outputs back. Backward runs the two all-to-alls again, the
other way. Bytes per rank per layer: 4 all-to-alls (2 forward, 2 backward), each (p-1) messages of
E/p C h values. :func:`all_to_all` is built from isend/recv; its time on the simulated clock is
:func:`all_to_all_cost`.
"""
from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn


def all_to_all(group, chunks) -> list[torch.Tensor]:
    """Chunk j goes to group index j; returns the chunks received, by source index (this rank's
    own chunk is kept, not sent). Round k of p-1 sends to index + k and receives from index - k
    (the shifted pairwise exchange); all sends are posted first, so no order deadlocks."""
    if len(chunks) != group.size:
        raise ValueError(f"all_to_all needs one chunk per rank of the group ({group.size}), got {len(chunks)}")
    me, p = group.index, group.size
    sends = [group.isend(chunks[(me + k) % p], (me + k) % p) for k in range(1, p)]
    out = [None] * p
    out[me] = chunks[me]
    for k in range(1, p):  # round k: to me + k, from me - k, so no port waits on another
        out[(me - k) % p] = group.recv((me - k) % p)
    for work in sends:
        work.wait()
    return out


def all_to_all_bytes(n: float, p: int) -> float:
    """Bytes one rank sends in an all-to-all of ``n`` bytes per rank in p equal chunks: (p-1)/p n."""
    return (p - 1) / p * n


def all_to_all_cost(n: float, p: int, link) -> float:
    """Seconds of an all-to-all of ``n`` bytes per rank on the simulated clock: the p-1 messages
    of n/p bytes leave one after another through the rank's port, (p-1) (alpha + n/p beta)."""
    return (p - 1) * link.time(n / p) if p > 1 else 0.0


class _AllToAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx, group, *chunks):
        ctx.group = group
        return tuple(t.contiguous() for t in all_to_all(group, [c.detach().contiguous() for c in chunks]))

    @staticmethod
    def backward(ctx, *grads):
        return (None, *all_to_all(ctx.group, [g.contiguous() for g in grads]))


def _check(experts: int, top_k: int, capacity_factor: float) -> None:
    if top_k not in (1, 2):
        raise ValueError(f"top_k={top_k!r}; valid: 1 (Switch), 2 (GShard)")
    if top_k > experts:
        raise ValueError(f"top_k={top_k} needs at least {top_k} experts, got {experts}")
    if not (isinstance(capacity_factor, (int, float)) and capacity_factor > 0):
        raise ValueError(f"capacity_factor={capacity_factor!r} must be a number > 0")


class MoE(nn.Module):
    """A mixture-of-experts MLP on one rank: tokens (T, h) -> (output (T, h), auxiliary loss)."""

    def __init__(self, hidden: int, ffn: int, experts: int, top_k: int = 1, capacity_factor: float = 1.25):
        super().__init__()
        _check(experts, top_k, capacity_factor)
        self.num_experts, self.top_k, self.capacity_factor = experts, top_k, capacity_factor
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(hidden, ffn), nn.ReLU(), nn.Linear(ffn, hidden))
                                     for _ in range(experts))

    def capacity(self, tokens: int) -> int:
        """Tokens one expert takes of ``tokens``: C = ceil(capacity_factor k T / E)."""
        return math.ceil(self.capacity_factor * self.top_k * tokens / self.num_experts)

    def route(self, x: torch.Tensor):
        """(token, slot, weight) of every kept assignment, the capacity, the aux loss, and how many
        assignments were dropped; slot = expert * capacity + position."""
        probs = F.softmax(self.gate(x), dim=-1)
        top_p, top_e = probs.topk(self.top_k, dim=-1)
        weights = top_p / top_p.sum(-1, keepdim=True) if self.top_k == 2 else top_p
        cap, used = self.capacity(len(x)), torch.zeros(self.num_experts, dtype=torch.long)
        tokens, slots, kept_w, dropped = [], [], [], 0
        for j in range(self.top_k):  # first choices first, then second choices, each in token order
            onehot = F.one_hot(top_e[:, j], self.num_experts)
            position = (onehot.cumsum(0) - 1 + used)[torch.arange(len(x)), top_e[:, j]]
            keep = position < cap
            used += onehot.sum(0)
            dropped += int((~keep).sum())
            tokens.append(torch.nonzero(keep).flatten())
            slots.append(top_e[keep, j] * cap + position[keep])
            kept_w.append(weights[keep, j])
        first = F.one_hot(top_e[:, 0], self.num_experts).float().mean(0)
        aux = self.num_experts * (first * probs.mean(0)).sum()
        return torch.cat(tokens), torch.cat(slots), torch.cat(kept_w), cap, aux, dropped

    def dispatch(self, x, tokens, slots, cap) -> torch.Tensor:
        """The [E, C, h] buffer of the tokens each expert takes (zeros where none)."""
        return x.new_zeros(self.num_experts * cap, x.shape[1]).index_add(0, slots, x[tokens]).view(
            self.num_experts, cap, x.shape[1])

    @staticmethod
    def combine(out, tokens, slots, weights, count) -> torch.Tensor:
        """Each token's output: the sum over its kept assignments of weight times the expert's output."""
        flat = out.reshape(-1, out.shape[-1])
        return flat.new_zeros(count, flat.shape[1]).index_add(0, tokens, flat[slots] * weights[:, None])

    def forward(self, x: torch.Tensor):
        """(output, aux loss): route, run every expert on its buffer, combine."""
        tokens, slots, weights, cap, aux, _ = self.route(x)
        buffer = self.dispatch(x, tokens, slots, cap)
        out = torch.stack([expert(buffer[e]) for e, expert in enumerate(self.experts)])
        return self.combine(out, tokens, slots, weights, len(x)), aux


class ExpertParallelMoE(nn.Module):
    """``from_moe(group, moe)``: the gate replicated, experts [r E/p, (r+1) E/p) on group index r;
    forward routes this rank's tokens and exchanges them by all-to-all (see the module doc)."""

    def __init__(self, group, moe: MoE):
        super().__init__()
        if moe.num_experts % group.size:
            valid = [k for k in range(1, moe.num_experts + 1) if moe.num_experts % k == 0]
            raise ValueError(f"{moe.num_experts} experts do not split over {group.size} ranks; valid group sizes: "
                             f"{', '.join(map(str, valid))}")
        self.group, self.moe = group, moe
        self.local = moe.num_experts // group.size
        first = group.index * self.local
        self.gate = copy.deepcopy(moe.gate)
        self.experts = nn.ModuleList(copy.deepcopy(moe.experts[first + i]) for i in range(self.local))

    @classmethod
    def from_moe(cls, group, moe: MoE) -> "ExpertParallelMoE":
        """The expert-parallel form of ``moe`` on ``group`` (this rank keeps its E/p experts)."""
        return cls(group, moe)

    def forward(self, x: torch.Tensor):
        """(output, aux loss): route locally, all-to-all the tokens to their experts' owners,
        run the local experts, all-to-all back, combine."""
        moe, p, k = self.moe, self.group.size, self.local
        saved, moe.gate = moe.gate, self.gate  # route with this rank's (replicated) gate
        try:
            tokens, slots, weights, cap, aux, _ = moe.route(x)
        finally:
            moe.gate = saved
        buffer = moe.dispatch(x, tokens, slots, cap)  # [E, C, h]
        received = _AllToAll.apply(self.group, *buffer.split(k))  # p pieces [k, C, h], by source
        mine = torch.stack(received, dim=1)  # [k, p, C, h]
        out = torch.stack([expert(mine[e].reshape(p * cap, -1)).view(p, cap, -1)
                           for e, expert in enumerate(self.experts)], dim=1)  # [p, k, C, h]
        back = _AllToAll.apply(self.group, *out.unbind(0))  # from each owner: [k, C, h]
        return moe.combine(torch.cat(back), tokens, slots, weights, len(x)), aux

    def bytes_per_step(self, tokens: int, hidden: int, value_bytes: int = 4) -> float:
        """Bytes this rank sends in one forward and backward: 4 all-to-alls of (p-1) chunks."""
        cap = self.moe.capacity(tokens)
        return 4 * (self.group.size - 1) * self.local * cap * hidden * value_bytes
