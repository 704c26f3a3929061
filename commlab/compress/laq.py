"""LAQ: lazily aggregated quantized gradients (Sun et al. 2019, "Communication-Efficient
Distributed Learning via Lazily Aggregated Quantized Gradients", NeurIPS).

Worker m keeps Qhat_m, its last uploaded quantized gradient (per tensor ``key``; 0 at first).
Each round it quantizes the innovation against it, deterministically with b bits (s = 2^b - 1
levels, tau = 1/s) inside the radius R = ||g_m - Qhat_m||_inf:

    q_i = floor((g_i - Qhat_i + R) / (2 tau R) + 1/2) in 0..s,   dQ = 2 tau R q - R,
    Q(g_m) = Qhat_m + dQ,   error eps_m = g_m - Q(g_m),  ||eps_m||_inf <= tau R.

The server keeps grad = sum_m Qhat_m, so a worker whose quantized gradient barely changed can
skip the round: the server reuses its old Qhat_m. Skip rule (the paper's condition (7), with
xi_d = xi / D as in its experiments):

    skip if  ||dQ||^2 <= (xi / D) sum_{d=1..D} ||theta^{k+1-d} - theta^{k-d}||^2 / (alpha^2 M^2)
                         + 3 (||eps_m^k||^2 + ||eps_m^last||^2)
    and the worker has skipped fewer than ``max_skip`` rounds in a row (the paper's t-bar).

The paper's model step is theta^{k+1} = theta^k - alpha sum_m Qhat_m, so each model term
||theta^{k+1-d} - theta^{k-d}||^2 / (alpha^2 M^2) is ||(1/M) sum_m Qhat_m||^2, the squared
norm of the aggregate d rounds ago; no step size or parameters are needed. ``combine``
records it on the rank that aggregates (every rank after an all-gather); a parameter-server
worker that never combines calls ``observe(aggregate, key)`` with the mean
gradient it applied. The rule is applied per tensor (per ``key``), not over the whole model.

Wire: sending: a 1-byte flag (1), R as fp32, the levels packed with ceil(log2(s + 1)) bits:
``header + 1 + 4 + ceil(d bits / 8)``; skipping: the flag (0) alone, ``header + 1`` bytes
(19 bytes in all for a 1-D tensor: an 18-byte header and the flag). ``decompress`` gives dQ (zeros for a skip);
``combine(payloads, key)`` adds them to the server's sum and returns (1/M) sum_m Qhat_m.
Deterministic and biased (unbiased = False); aggregation "gather". Declared for a round that
sends (``payload_bytes(shape, sends=False)`` is the flag alone); its cost on a GPU (``cost``,
a worker with a Qhat): the innovation, its radius (a sync), the levels, their decoding into
Qhat, and the squared norms of the skip rule and the errors (a sync each): about 67 passes, 62
launches, 6 syncs; decode: the flag (a sync), unpacking, scaling, 14.5 passes, 20 launches.
"""
from __future__ import annotations

from collections import deque

import torch

import math

from . import coding
from . import cost as costs
from .base import Compressor, Payload, check_int, check_levels, check_number, header_bytes, restore, work
from .cost import CHECK, Cost, KernelWork, tiny


class LAQ(Compressor):
    """``LAQ(levels=15, D=10, xi=0.8, max_skip=100)``: skip when the innovation is small."""

    name = "laq"
    keeps_round_state = True  # the server keeps the sum of the last uploads
    no_error_feedback = ("keeps its own memory of what it sent (it uploads the quantized change, or nothing); "
                         "error feedback on top would count the error twice")
    unbiased = False
    aggregation = "gather"

    def __init__(self, levels: int = 15, D: int = 10, xi: float = 0.8, max_skip: int = 100):
        super().__init__()
        self.levels = check_levels(levels, self.name, 2 ** 20)
        self.bits = coding.bits_for(levels)
        self.D = check_int(D, self.name, "D", 1)
        self.xi = check_number(xi, self.name, "xi", 0, float("inf"))
        self.max_skip = check_int(max_skip, self.name, "max_skip", 0)
        self.workers: dict = {}   # key -> dict(qhat, err, clock)
        self.sums: dict = {}      # key -> server's sum_m Qhat_m
        self.history: dict = {}   # key -> last D values of ||aggregate||^2
        self.sent = self.skipped = 0

    def _threshold(self, key, err: float, err_last: float) -> float:
        hist = self.history.get(key, ())
        return self.xi / self.D * sum(hist) + 3 * (err + err_last)

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """A flag only (1 byte) when the quantized innovation is small enough to skip, else flag, radius and
        b-bit codes; updates Qhat."""
        self.check(t)
        g = work(t)
        st = self.workers.get(key)
        if st is None or st["qhat"].shape != g.shape:
            st = self.workers[key] = {"qhat": torch.zeros_like(g), "err": 0.0, "clock": 0, "fresh": True}
        diff = g - st["qhat"]
        radius = float(diff.abs().max().float()) if diff.numel() else 0.0
        if radius > 0:
            q = diff.add_(radius).mul_(self.levels / (2 * radius)).add_(0.5).floor_().clamp_(0, self.levels)
            dq = q * (2 * radius / self.levels) - radius
        else:
            q, dq = torch.zeros_like(g), torch.zeros_like(g)
        err = float((g - st["qhat"] - dq).pow(2).sum())
        if not st["fresh"] and st["clock"] < self.max_skip and \
                float(dq.pow(2).sum()) <= self._threshold(key, err, st["err"]):
            st["clock"] += 1
            self.skipped += 1
            return Payload({"flag": torch.zeros(1, dtype=torch.uint8, device=t.device)}, t.shape, t.dtype)
        p = Payload({"flag": torch.ones(1, dtype=torch.uint8, device=t.device),
                     "radius": torch.full((1,), radius, dtype=torch.float32, device=t.device),  # no host copy
                     "q": coding.pack_bits(q.to(torch.int32), self.bits)}, t.shape, t.dtype)
        st["qhat"] += work(self.decompress(p))  # exactly what the server adds
        st.update(err=float((g - st["qhat"]).pow(2).sum()), clock=0, fresh=False)
        self.sent += 1
        return p

    def decompress(self, p: Payload) -> torch.Tensor:
        """dQ = 2 tau R q - R from the codes, or zeros for a skipped round."""
        dtype = torch.float64 if p.dtype == torch.float64 else torch.float32
        if int(p["flag"][0]) == 0:
            return torch.zeros(p.shape, dtype=p.dtype, device=p["flag"].device)
        q = coding.unpack_bits(p["q"], self.bits, p.numel).to(dtype)
        radius = p["radius"].to(dtype)
        return restore(q.mul_(2 * radius / self.levels).sub_(radius), p)

    def combine(self, payloads: list, key=None) -> torch.Tensor:
        """The server's running sum of every upload, divided by the number of workers (per key)."""
        if not payloads:
            raise ValueError(f"{self.name}: combine needs at least one payload")
        first = payloads[0]
        total = self.sums.get(key)
        if total is None or total.numel() != first.numel:
            dtype = torch.float64 if first.dtype == torch.float64 else torch.float32
            total = self.sums[key] = torch.zeros(first.numel, dtype=dtype, device=first["flag"].device)
        for p in payloads:
            if int(p["flag"][0]):
                total += work(self.decoded(p))
        mean = total / len(payloads)
        self.observe(mean, key)
        return mean.reshape(first.shape).to(first.dtype)

    def payload_bytes(self, shape, dtype=torch.float32, *, sends: bool = True) -> int:
        """A round that sends: flag, radius and packed levels; ``sends=False``: the flag alone."""
        if not sends:
            return header_bytes(len(shape), ["flag"]) + 1
        return header_bytes(len(shape), ["flag", "radius", "q"]) + 1 + 4 + -(-math.prod(shape) * self.bits // 8)

    def cost(self, shape) -> Cost:
        """A worker's round that sends, after its first: quantize the innovation, test the skip rule,
        update Qhat by the decoded levels and the error; decode: unpack and scale."""
        d = max(math.prod(shape), 1)
        decode = (KernelWork(syncs=1)  # the flag, read on the host
                  + costs.unpack_codes(self.bits, d, d) + KernelWork(2, 1)  # the levels, to fp32
                  + tiny(2) + KernelWork(2, 1) + KernelWork(2, 1))  # 2 R / s; q *= it; q -= R
        encode = (CHECK + KernelWork(3, 1)  # diff = g - Qhat
                  + KernelWork(2, 1) + KernelWork(1, 1, syncs=1)  # R = max |diff|, float()
                  + KernelWork(2, 1).repeat(5)  # (diff + R) s / (2 R) + 1/2, floor, clamp: the levels
                  + KernelWork(2, 1) + KernelWork(2, 1)  # dQ = q 2 R / s - R
                  + KernelWork(3, 1).repeat(2) + KernelWork(2, 1) + KernelWork(1, 1, syncs=1)  # ||g - Qhat - dQ||^2
                  + KernelWork(2, 1) + KernelWork(1, 1, syncs=1)  # ||dQ||^2, the skip rule
                  + tiny(2) + KernelWork(2, 1) + costs.pack_codes(self.bits, d, d, 4)  # flag, R; levels to int32, packed
                  + decode + KernelWork(3, 1)  # Qhat += what the server adds
                  + KernelWork(3, 1) + KernelWork(2, 1) + KernelWork(1, 1, syncs=1))  # the new error ||g - Qhat||^2
        return Cost(encode, decode)

    def combine_work(self, shape, n: int) -> KernelWork:
        """The server's sum: per payload its flag (a sync), decode, add; the mean, and ||mean||^2 for the rule."""
        one = KernelWork(syncs=1) + self.cost(shape).decode + KernelWork(3, 1)
        return one.repeat(n) + KernelWork(2, 1) + KernelWork(3, 1) + KernelWork(4, 1) + KernelWork(2, 1, syncs=1)  # / n; to fp64, ^2, sum

    def observe(self, aggregate: torch.Tensor, key=None) -> None:
        """Record this round's aggregate (mean gradient applied) for the skip rule."""
        self.history.setdefault(key, deque(maxlen=self.D)).append(float(work(aggregate).double().pow(2).sum()))

    def reset(self) -> None:
        """Forget every worker's and the server's state, the skip history and the sent/skipped counts."""
        self.workers.clear()
        self.sums.clear()
        self.history.clear()
        self.sent = self.skipped = 0
