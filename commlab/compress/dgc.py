"""Deep Gradient Compression (Lin, Han, Mao, Wang and Dally 2018, "Deep Gradient
Compression: Reducing the Communication Bandwidth for Distributed Training").

Top-k sparsification with a local residual, made to work with momentum SGD. Each worker
keeps, per tensor, a momentum buffer u and an accumulator v (both start at 0). One step
with local gradient g and density rho_t (fraction of coordinates sent):

    g   <- g min(1, clip / ||g||)            local gradient clipping (optional)
    u   <- m u + g                           momentum correction: momentum before sparsifying
    v   <- v + u                             local accumulation
    S   =  the rho_t d largest |v_i|         (exact top-k, :func:`sparse.topk_indices`)
    send   v_S
    v_S <- 0,  u_S <- 0                      momentum factor masking

Momentum correction: sparsifying g and applying momentum after aggregation would let the
delayed coordinates miss their momentum; accumulating the *velocity* u instead makes a
coordinate sent after T steps carry the same sum as dense momentum SGD would have applied.
Factor masking clears u where v was sent, so stale momentum does not keep pushing a
coordinate that has just been applied. Gradient clipping is done locally before the
accumulation; the paper scales the global threshold by N^(-1/2): pass ``clip=G / sqrt(N)``.

Warm-up of the sparsity: in the first E = ``warmup_steps`` calls for a tensor the density
falls exponentially from 25% (75% sparsity) to ``ratio``,

    rho_t = 0.25 (ratio / 0.25)^(t / E) for t < E,   rho_t = ratio afterwards,

which for ratio 0.001 and E = 4 gives 25%, 6.3%, 1.6%, 0.40%, 0.1% (the paper's 75%, 93.75%,
98.4375%, 99.6%, 99.9% over four epochs). A step is one ``compress`` call for that key.

How it meets the optimizer: DGC applies momentum locally, inside the compressor, so the
optimizer must run *without* momentum: plain SGD, w <- w - lr (1/N) sum_i C_i, where C_i is
worker i's sparse v_S. Weight decay, if any, is added to g before ``compress`` (the paper
does so). What is sent is biased (top-k of the accumulator): the unsent rest waits in v,
while factor masking deliberately drops the momentum of the coordinates just sent.
Aggregation "gather"; the wire form is top-k's (:meth:`DGC.payload_bytes` at a given step,
after the warm-up by default). On a GPU (``cost``, a step after the warm-up): top-k's encode
plus the momentum and accumulation (8 passes, 3 launches) and the masking of the two buffers
(6 k/d passes, 2 launches); decode: top-k's. Left out: the Nesterov variant, and the
hierarchical sampling of the threshold (our exact selection is already faster than topk).
"""
from __future__ import annotations

import math

import torch

from . import cost as costs
from .base import Compressor, Payload, check_int, check_number, check_ratio
from .cost import CHECK, Cost, KernelWork
from .sparse import check_sparse, densify, sparse_nbytes, sparse_payload, topk_indices
from .topk import count

WARMUP_START = 0.25


class DGC(Compressor):
    """``DGC(ratio, momentum=0.9, warmup_steps=0, clip=None)``: stateful per worker and key."""

    name = "dgc"
    applies_momentum = True  # momentum correction: the Trainer's momentum must be 0
    unbiased = False
    aggregation = "gather"

    def __init__(self, ratio: float = 0.001, momentum: float = 0.9, warmup_steps: int = 0, clip=None,
                 seed: int = 0):
        super().__init__(seed)
        self.ratio = check_ratio(ratio, self.name)
        self.momentum = check_number(momentum, self.name, "momentum", 0.0, 1.0, high_open=True)
        self.warmup_steps = check_int(warmup_steps, self.name, "warmup_steps", 0)
        self.clip = None if clip is None else check_number(clip, self.name, "clip", 0.0, math.inf, low_open=True)
        self.state: dict = {}  # key -> [u, v, step]

    def density(self, step: int) -> float:
        """rho_t: the fraction of coordinates sent at step t (the warm-up schedule)."""
        if step >= self.warmup_steps or self.ratio >= WARMUP_START:
            return self.ratio
        return WARMUP_START * (self.ratio / WARMUP_START) ** (step / self.warmup_steps)

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """u <- m u + g, v <- v + u; send the top rho_t of |v| (sparse payload), zero them in u and v."""
        flat = self.check(t).detach().reshape(-1)
        wide = torch.promote_types(t.dtype, torch.float32)  # buffers in fp32 (fp64 stays fp64)
        st = self.state.get(key)
        if st is None or st[0].numel() != flat.numel():
            st = self.state[key] = [torch.zeros_like(flat, dtype=wide), torch.zeros_like(flat, dtype=wide), 0]
        u, v, step = st
        g = flat.to(wide)
        if self.clip is not None:
            norm = float(g.norm())
            if norm > self.clip:
                g = g * (self.clip / norm)
        u.mul_(self.momentum).add_(g)
        v.add_(u)
        idx = topk_indices(v.abs(), count(self.density(step), flat.numel()), self.seed)
        values = v.index_select(0, idx)
        v.index_fill_(0, idx, 0)
        u.index_fill_(0, idx, 0)
        st[2] = step + 1
        return sparse_payload(idx, values, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """The dense tensor of a sparse (idx, val) payload."""
        check_sparse(p, self.name)
        return densify(p)

    def step(self, key=None) -> int:
        """Calls made so far for ``key``."""
        st = self.state.get(key)
        return 0 if st is None else st[2]

    def payload_bytes(self, shape, dtype=torch.float32, *, step: int | None = None) -> int:
        """Exact payload size at ``step`` (the number of earlier calls for that key; None: after
        the warm-up, the steady state)."""
        return sparse_nbytes(tuple(shape), self._kept(shape, step), dtype)

    def _kept(self, shape, step) -> int:
        return count(self.ratio if step is None else self.density(step), math.prod(shape))

    def cost(self, shape, *, step: int | None = None) -> Cost:
        """A step with buffers (after the warm-up unless ``step`` says): momentum, accumulation,
        top-k of |v|, the values, both buffers masked; decode: densify."""
        d, k = max(math.prod(shape), 1), self._kept(shape, step)
        encode = (CHECK
                  + (KernelWork(1, 1, syncs=1) + KernelWork(2, 1) if self.clip is not None else costs.NONE)  # ||g||, g scaled
                  + KernelWork(2, 1) + KernelWork(3, 1)  # u *= m; u += g
                  + KernelWork(3, 1)  # v += u
                  + costs.topk(k, d) + costs.gather(k, d)  # |v|, topk, the values v_S
                  + KernelWork(3 * k / d, 1).repeat(2)  # v_S = 0, u_S = 0 (index_fill_: positions read, values written)
                  + costs.positions_out(k, d))
        return Cost(encode, costs.densify(k, d))

    def reset(self) -> None:
        """Forget every momentum buffer, accumulator and warm-up step count."""
        self.state.clear()

    def __repr__(self) -> str:
        return f"dgc({self.ratio:g}, momentum={self.momentum:g}, warmup_steps={self.warmup_steps})"
