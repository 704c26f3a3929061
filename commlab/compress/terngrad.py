"""TernGrad: ternary gradients {-s, 0, +s} (Wen et al. 2017, "TernGrad: Ternary Gradients to
Reduce Communication in Distributed Deep Learning").

With a scaler s >= ||x||_inf,

    Q(x)_i = s * sign(x_i) * b_i,   b_i ~ Bernoulli(|x_i| / s),

so E[Q(x)] = x (unbiased) and E ||Q(x) - x||^2 = sum_i (s |x_i| - x_i^2) = s ||x||_1 - ||x||_2^2.
The paper takes s per layer (here: per tensor, i.e. per ``key``).

Scaler sharing: in :meth:`TernGrad.aggregate` the workers first agree on one scaler,
s = max_i ||x_i||_inf, with an all-reduce(max) of a single float (4 bytes per rank; the
collective is an argument, :mod:`commlab.arch.aggregate` passes Comm's), then quantize with it. Every worker's message is then s times a ternary vector, so the
average is s/N times the sum of the ternary vectors: workers' levels share one scale, the
server (or every rank, after an all-gather) adds integers. Each payload still carries s so it
decodes on its own. A larger shared s raises each worker's variance to s ||x_i||_1 - ||x_i||^2;
the paper's optional clipping (``clip=c``: clip x to c standard deviations first, c = 2.5 in
the paper) bounds s but makes the compressor biased.

Wire (``coding="packed"``, the default): s as fp32, then the ternary digits five to a byte
(3^5 = 243 <= 256): 1.6 bits per coordinate, ``header + 4 + ceil(d / 5)`` bytes.
``coding="bytes"``: s as fp32, then every digit as one int8 in {-1, 0, +1}: 8 bits per
coordinate, ``header + 4 + d`` bytes, five times the packed digits. GRACE (Xu et al., ICDCS 2021)
sends TernGrad so, and a simulator of its traffic needs the same bytes. Both codings decode to the
same values. Aggregation "gather".

Cost: one |x| (its max is s, then in place the probabilities |x_i| / s), one uniform draw per
coordinate (the bulk of the time), the trits as uint8 ``keep << (x < 0)``, five multiply-adds
per byte to pack; decompress looks up 5 values per byte in a 256 x 5 table. Declared (``wire``):
an all-reduce of the 4-byte scaler, then an all-gather of the payloads; ``cost``, on a GPU, is
:meth:`TernGrad.aggregate`'s encode, the scaler (check, max |x|: a sync) then ``compress`` with
it (check and max |x| again, the draw, the trits): 17 passes, 31 launches, 5 syncs; decode 1.5
passes, 6 launches. ``coding="bytes"`` makes the digits int8 with one negation and one select
(1.5 passes, 2 launches) instead of the shift and the packing; its decode is one multiply of the
int8 digits by s (1.25 passes).
"""
from __future__ import annotations

import math

import torch

from .. import checks
from . import coding
from . import cost as costs
from .base import Compressor, Payload, check_number, header_bytes, restore, work
from .cost import CHECK, Cost, KernelWork, tiny

CODINGS = ("packed", "bytes")


class TernGrad(Compressor):
    """``TernGrad(clip=None, coding="packed", seed=0)``; ``compress(t, scale=s)`` quantizes with a given scaler."""

    name = "terngrad"
    shown = (("clip", None), ("coding", "packed"))
    no_error_feedback = ("aggregates by its own protocol (the ranks share one scaler first), which an "
                         "error-feedback wrapper cannot see")
    aggregation = "gather"
    protocol = "shared_scale"  # commlab.arch.aggregate: all-reduce(max) of s, then all-gather

    def __init__(self, clip: float | None = None, coding: str = "packed", seed: int = 0):
        super().__init__(seed)
        self.clip = None if clip is None else check_number(clip, self.name, "clip", 0, float("inf"), low_open=True)
        self.coding = checks.choice("coding", coding, CODINGS, where=self.name)
        self.unbiased = clip is None

    def _clipped(self, t: torch.Tensor) -> torch.Tensor:
        x = work(t)
        if self.clip is not None and x.numel() > 1:
            c = self.clip * float(x.std())
            x = x.clamp(-c, c)
        return x

    def local_scale(self, t: torch.Tensor) -> float:
        """This worker's scaler ||x||_inf (after clipping)."""
        x = self._clipped(self.check(t))
        return float(x.abs().max()) if x.numel() else 0.0

    def compress(self, t: torch.Tensor, key=None, scale: float | None = None) -> Payload:
        """s (fp32, ||x||_inf or the given shared ``scale``) and one trit per coordinate: five per byte, or
        one int8 each ("bytes")."""
        self.check(t)
        x = self._clipped(t)
        a = x.abs()  # |x| once: its max is the scaler, then (in place) the keep probabilities
        top = float(a.max()) if x.numel() else 0.0
        s = top if scale is None else float(scale)
        if s < top * (1 - 1e-6):
            raise ValueError(f"{self.name}: scale={s!r} is below ||x||_inf = {top!r}; the shared scaler must be "
                             f"the maximum over workers")
        s = max(s, top)
        p = a.div_(s) if s > 0 else torch.zeros_like(x)
        keep = torch.rand(x.numel(), generator=self.generator(x.device), device=x.device, dtype=x.dtype) < p
        self.tick()
        scaler = torch.full((1,), s, dtype=torch.float32, device=t.device)  # filled, not copied
        if self.coding == "bytes":
            ones = keep.view(torch.int8)
            return Payload({"scale": scaler, "digits": torch.where(x < 0, -ones, ones)}, t.shape, t.dtype)
        trits = keep.view(torch.uint8) << (x < 0).view(torch.uint8)  # 0; +1 -> 1; -1 -> 2
        return Payload({"scale": scaler, "trits": coding.pack_trits(trits)}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """s * {0, +1, -1} per coordinate from the packed trits or the int8 digits."""
        dtype = torch.float64 if p.dtype == torch.float64 else torch.float32
        s = p["scale"].to(dtype)
        if "digits" in p.parts:
            return restore(p["digits"] * s, p)  # int8 times s: one kernel, in s's precision
        lut = torch.cat([torch.zeros_like(s), s, -s])  # [0, s, -s] on the device (no copy from the host)
        return restore(coding.unpack_trits(p["trits"], p.numel, lut), p)  # lut[trit], five per lookup

    def aggregate(self, t: torch.Tensor, key, max_over_ranks, gather) -> torch.Tensor:
        """Scaler sharing, with the collectives as arguments: ``max_over_ranks(s)`` takes the
        elementwise max of a 1-element tensor over all ranks in place, ``gather(p)`` returns
        every rank's Payload (an all-gather of their bytes); the mean of the ternary payloads."""
        s = torch.full((1,), self.local_scale(t), dtype=torch.float32, device=t.device)
        max_over_ranks(s)
        return self.combine(gather(self.compress(t, key, scale=float(s))), key).to(t.device)

    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """The header, the fp32 scaler and ceil(d / 5) bytes of trits (d int8 digits with "bytes")."""
        d = math.prod(shape)
        if self.coding == "bytes":
            return header_bytes(len(shape), ["scale", "digits"]) + 4 + d
        return header_bytes(len(shape), ["scale", "trits"]) + 4 + -(-d // 5)

    def wire(self, shape, dtype=torch.float32) -> tuple:
        """The scaler's all-reduce (max, one fp32), then the all-gather of the payloads."""
        return (("allreduce", 4), ("allgather", self.payload_bytes(shape, dtype)))

    def cost(self, shape) -> Cost:
        """The shared scaler's local part, then ``compress`` with the shared one; decode: the trits looked up."""
        d = max(math.prod(shape), 1)
        clipped = KernelWork(1, 1, syncs=1) + KernelWork(2, 1) if self.clip is not None else costs.NONE  # std (a sync); clamp
        scaler = CHECK + clipped + KernelWork(2, 1) + KernelWork(1, 1, syncs=1)  # ||x||_inf: |x|, max, float()
        encode = (scaler + tiny(1) + KernelWork(syncs=1)  # the scaler filled on the device; float(shared s)
                  + CHECK + clipped
                  + KernelWork(2, 1) + KernelWork(1, 1, syncs=1)  # a = |x|; its max, float()
                  + KernelWork(2, 1) + KernelWork(1, 1)  # a /= s; one uniform draw per coordinate
                  + KernelWork(2.25, 1) + KernelWork(1.25, 1)  # keep = draw < a; x < 0
                  + tiny(1))  # the scaler's part
        if self.coding == "bytes":  # -keep, where(x < 0, -keep, keep) as int8; decode: digits * s
            return Cost(encode + KernelWork(0.5, 1) + KernelWork(1, 1), KernelWork(1.25, 1))
        encode += KernelWork(0.75, 1) + costs.pack_trits(d, d)  # keep << negative; trits five to a byte
        return Cost(encode, tiny(3) + costs.unpack_trits(d, d))  # [0, s, -s]; a lookup per byte
