"""Random-k sparsification with a shared seed (Stich, Cordonnier and Jaggi 2018; Wangni et
al. 2018 analyse random sparsification).

Pick a uniformly random set S of k = round(ratio d) coordinates and scale them by d/k:

    C(x)_i = (d/k) x_i for i in S, else 0,        E[C(x)] = x,
    E ||C(x) - x||^2 = (d/k - 1) ||x||^2.

Unbiased, at the price of variance d/k - 1 times the signal (100x for ratio 0.01); with
error feedback instead of the d/k scaling it is a (k/d)-contraction like top-k in
expectation, but ``"randk+ef"`` keeps the scaling: use top-k for that.

Shared seed. Call t on every rank draws S from the generator seeded by (seed, t) (see
:class:`commlab.compress.base.Compressor`), so with the same ``seed`` on every rank and
the same order of calls all ranks pick the same S. Then the k values of all ranks can be
added in compressed form: aggregation "sum", an all-reduce of k values instead of d.

Wire: no indices, only the draw's 64-bit seed and the k values; the receiver draws S again:
``header (27 bytes for a 1-D tensor) + 8 + k * value bytes``. In an all-reduce only the k
values travel (``summable``).

On a GPU (``cost``; summable and from_summed, f = k / d): the check, the draw of S (random
positions, unique (a sync), a permutation, a sort: about 20 f passes, 5 launches), the k values
gathered and copied out: 1 + 27 f passes, 12 launches, 2 syncs; decode: zeros, the values scaled
and put at S: 1 + 6 f passes, 3 launches (``decompress`` reads the seed first: one sync more).

Drawing S: for k > d/8, the first k entries of a random permutation; else k positions drawn
with replacement, made distinct (``unique``, topped up while fewer than k) and k of them
kept at random. Every step is symmetric in the d positions, so S is uniform over k-subsets,
in O(k log k) instead of the O(d) of a permutation (d = 25M: 10 ms instead of 0.8 s).
"""
from __future__ import annotations

import math

import torch

from .base import Compressor, Payload, check_ratio, header_bytes
from .cost import CHECK, Cost, KernelWork
from .topk import count as kept


def subset(d: int, k: int, seed: int, device="cpu") -> torch.Tensor:
    """k distinct positions out of d, uniformly at random from ``seed``, sorted (int64)."""
    g = torch.Generator(device=device).manual_seed(seed)
    if k == 0:
        return torch.zeros(0, dtype=torch.int64, device=device)
    if 8 * k > d:
        return torch.randperm(d, generator=g, device=device)[:k].sort().values
    u = torch.unique(torch.randint(0, d, (k + k // 16 + 16,), generator=g, device=device))
    while u.numel() < k:
        u = torch.unique(torch.cat([u, torch.randint(0, d, (k - u.numel() + 16,), generator=g, device=device)]))
    return u[torch.randperm(u.numel(), generator=g, device=device)[:k]].sort().values


class RandK(Compressor):
    """``RandK(ratio, seed)``: send round(ratio d) random coordinates, the same on every rank."""

    name = "randk"
    unbiased = True
    aggregation = "sum"

    def __init__(self, ratio: float = 0.01, seed: int = 0):
        super().__init__(seed)
        self.ratio = check_ratio(ratio, self.name)
        self._last = None  # (draw seed, d, positions) of the latest draw, for from_summed

    def _draw(self, t: torch.Tensor) -> tuple[int, torch.Tensor]:
        d = t.numel()
        seed = self.generator(t.device).initial_seed()
        self.tick()
        self._last = (seed, d, subset(d, kept(self.ratio, d), seed, t.device))
        return seed, self._last[2]

    def _indices(self, seed: int, d: int, device) -> torch.Tensor:
        if self._last is not None and self._last[:2] == (seed, d):
            return self._last[2].to(device)
        return subset(d, kept(self.ratio, d), seed, device)

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """The draw's seed (8 bytes) and the k chosen values; positions are redrawn from the seed."""
        flat = self.check(t).detach().reshape(-1)
        seed, idx = self._draw(flat)
        # beside the values (NCCL sends GPU tensors), by a fill kernel rather than a copy from the host
        seed_part = torch.full((1,), seed, dtype=torch.int64, device=t.device)
        return Payload({"seed": seed_part, "val": flat[idx]}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """The k values, scaled by d / k, at the positions the seed draws; zero elsewhere."""
        if set(p.parts) != {"seed", "val"}:
            raise ValueError(f"{self.name}: expected a payload with parts 'seed' and 'val', got {sorted(p.parts)}")
        return self._expand(p["val"], int(p["seed"][0]), p.shape, p.dtype, 1)

    def _expand(self, values, seed, shape, dtype, count):
        d = math.prod(shape)
        out = torch.zeros(d, dtype=dtype, device=values.device)
        k, wide = values.numel(), torch.promote_types(dtype, torch.float32)
        if k:
            out[self._indices(seed, d, values.device)] = (values.to(wide) * (d / k / count)).to(dtype)
        return out.view(shape)

    # -- "sum" aggregation: the k values of every rank sit at the same positions
    def summable(self, t: torch.Tensor, key=None) -> torch.Tensor:
        """The k values at this call's shared random positions (the same on every rank)."""
        flat = self.check(t).detach().reshape(-1)
        return flat[self._draw(flat)[1]].clone()

    def from_summed(self, s: torch.Tensor, like: torch.Tensor, count: int) -> torch.Tensor:
        """The summed values scaled by d / (k count) at the last draw's positions."""
        if self._last is None or self._last[1] != like.numel():
            raise ValueError(f"{self.name}: from_summed must follow summable on a tensor of the same size")
        return self._expand(s, self._last[0], like.shape, like.dtype, count)

    def theta(self, shape) -> float:
        """The variance factor (the book's theta) for a tensor of ``shape``: E ||C(x) - x||^2 =
        theta ||x||^2 with theta = d/k - 1."""
        d = math.prod(shape)
        k = kept(self.ratio, d)
        return d / k - 1 if k else math.inf

    def kept_count(self, shape) -> int:
        """k, the coordinates a tensor of ``shape`` sends."""
        return kept(self.ratio, math.prod(shape))

    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """Exact payload size for a tensor of ``shape`` and ``dtype``: the seed and k values."""
        return header_bytes(len(shape), ["seed", "val"]) + 8 + self.summed_bytes(shape, dtype)

    def summed_bytes(self, shape, dtype=torch.float32) -> int:
        """k values: the all-reduce adds the values at the shared positions."""
        return self.kept_count(shape) * dtype.itemsize

    def cost(self, shape) -> Cost:
        """``summable``: check, draw S, gather, copy; ``from_summed``: zeros, scale, put at S."""
        d, k = max(math.prod(shape), 1), self.kept_count(shape)
        f = k / d
        if 8 * k > d:  # the first k of a random permutation of d, sorted
            draw = KernelWork(2, 1) + KernelWork(f * 6, 1)
        else:  # k + k/16 + 16 positions, unique (a sync), a random order of them, k kept, sorted
            draw = (KernelWork(f * 2.125, 1) + KernelWork(f * 4.25, 1, syncs=1) + KernelWork(f * 2.125, 1) + KernelWork(f * 6, 1)
                    + KernelWork(f * 6, 1))
        encode = (CHECK + draw
                  + KernelWork(f * 4, 1)  # x[S]
                  + KernelWork(f * 2, 1))  # copied out (summable's clone; compress fills the seed part instead)
        return Cost(encode, self._expand_work(d, k))

    @staticmethod
    def _expand_work(d: int, k: int) -> KernelWork:
        return KernelWork(1, 1) + KernelWork(2 * k / d, 1) + KernelWork(4 * k / d, 1)  # zeros(d); values * d / (k N); put at S

    def decompress_work(self, shape, **assumed) -> KernelWork:
        """``decompress``: the seed read on the host (to draw S again), then as ``from_summed``."""
        return KernelWork(syncs=1) + self._expand_work(max(math.prod(shape), 1), self.kept_count(shape))

    def __repr__(self) -> str:
        return f"randk({self.ratio:g})"
