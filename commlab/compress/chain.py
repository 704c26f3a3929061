"""Sparsify, then quantize what is kept: ``"topk(0.01)+qsgd(levels=16)"``.

Qsparse-local-SGD (Basu, Data, Karakus and Diggavi, NeurIPS 2019, "Qsparse-local-SGD:
Distributed SGD with Quantization, Sparsification, and Local Computations") composes a
sparsifier S with a quantizer Q applied to the kept values only:

    C(x) = scatter_S(x)( Q(x_S) ),        x_S: the k values S keeps, at their positions,

so the wire carries S's positions and Q's code of a k-vector instead of k full values. With
top-k as S and an unbiased Q (QSGD, TernGrad, natural compression),
E[C(x)] = topk(x): the quantizer adds variance on the kept support only, and the composition
is still a contraction for error feedback when Q's variance is small enough (Basu et al.,
Lemma 1; ``"topk(0.01)+qsgd(levels=16)+ef"``). Rand-k then an unbiased Q is unbiased
(rand-k's d/k scaling is applied after decoding). The paper's own examples are top-k or
rand-k with QSGD and with the scaled sign ("SignTop_k").

Valid chains: a sparsifier (:data:`SPARSIFIERS`) then a quantizer (:data:`QUANTIZERS`).
Anything else (two quantizers, a quantizer first, DGC or gTop-k with their own protocols,
three parts) is refused with the list of valid chains.

Wire: one :class:`~commlab.compress.base.Payload` whose parts are the sparsifier's locator
(``"idx"``: the positions, 2 or 4 bytes each, :mod:`commlab.compress.sparse`; rand-k:
``"seed"``, 8 bytes) followed by the quantizer's parts for the k-vector, with one header:

    nbytes = header_bytes(ndim, [locator] + Q's parts) + locator bytes + (Q's payload of k values - its header)

e.g. top-k then QSGD with s levels on d <= 65536 coordinates: 2 k + 4 ceil(k / b) +
ceil(k (1 + ceil(log2(s + 1))) / 8) bytes plus the header, against 6 k for top-k with fp32
values. The receiver learns k from the locator (the number of positions; rand-k's k follows
from its ratio and d). Aggregation "gather": every rank keeps its own positions.

Declared: ``payload_bytes`` by the formula above from the two parts' declarations (keywords
go to the sparsifier: threshold's ``kept``); ``cost``: the sparsifier's encode, then the
quantizer's on k values (its passes times k / d), and decode the other way round.

Randomness: the chain's ``seed`` (the sparsifier's) seeds the sparsifier, and mixed with the
quantizer's own seed (:func:`commlab.compress.base.mix`) the quantizer, so rand-k's positions
and the quantizer's noise never share a generator; setting ``chain.seed`` (the Trainer gives
rank r seed + r) sets both.
"""
from __future__ import annotations

import torch

import math

from .base import Compressor, Payload, header_bytes, mix
from .cost import NONE, Cost
from .topk import count as kept_count

SPARSIFIERS = ("topk", "randk", "threshold")
QUANTIZERS = ("qsgd", "terngrad", "signsgd", "scaled_sign", "natural", "fp16", "bf16")
LOCATORS = ("idx", "seed")  # the sparsifier's parts that say where the values go


def valid_chains() -> str:
    """Words naming a valid chain: one of the sparsifiers, then one of the quantizers."""
    return f"a sparsifier ({', '.join(SPARSIFIERS)}) then a quantizer ({', '.join(QUANTIZERS)})"


class SparseThenQuantize(Compressor):
    """``SparseThenQuantize(sparsifier, quantizer)``: the sparsifier's positions, the quantizer's
    code of the kept values (see the module docstring)."""

    aggregation = "gather"

    def __init__(self, sparsifier: Compressor, quantizer: Compressor):
        names = f"{getattr(sparsifier, 'name', sparsifier)!r} then {getattr(quantizer, 'name', quantizer)!r}"
        if not (isinstance(sparsifier, Compressor) and isinstance(quantizer, Compressor)) or \
                sparsifier.name not in SPARSIFIERS or quantizer.name not in QUANTIZERS:
            raise ValueError(f"cannot chain {names}: a chain is {valid_chains()}, "
                             f"as in 'topk(0.01)+qsgd(levels=16)' (Qsparse-local-SGD)")
        if getattr(sparsifier, "signs", False):
            raise ValueError(f"cannot chain {names}: threshold(signs=True) sends no values to quantize; "
                             "use threshold(tau) (signs=False)")
        self.sparsifier, self.quantizer, self._own = sparsifier, quantizer, quantizer.seed
        super().__init__(sparsifier.seed)
        self.name = f"{sparsifier.name}+{quantizer.name}"
        self.unbiased = sparsifier.unbiased and quantizer.unbiased

    @property
    def seed(self) -> int:
        """The seed; setting it gives the sparsifier this seed and the quantizer one mixed from it."""
        return self._seed

    @seed.setter
    def seed(self, value: int) -> None:  # the Trainer gives each rank seed + rank: pass it on
        self._seed = value
        if hasattr(self, "sparsifier"):
            self.sparsifier.seed, self.quantizer.seed = value, mix(value, self._own, 1)

    def _kept(self, locator: dict, d: int) -> int:
        if "idx" in locator:
            return locator["idx"].numel()
        return kept_count(self.sparsifier.ratio, d)  # rand-k: k = round(ratio d)

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """The sparsifier's positions beside the quantizer's code of the kept values (no values when none kept)."""
        sparse = self.sparsifier.compress(t, key)
        values = sparse.parts.pop("val")
        if not values.numel():  # nothing kept: the positions (none) say it all
            return Payload(sparse.parts, t.shape, t.dtype)
        q = self.quantizer.compress(values.to(t.dtype), key)
        clash = set(q.parts) & set(sparse.parts)
        if clash:
            raise ValueError(f"{self.name}: the quantizer's parts {sorted(clash)} clash with the sparsifier's")
        return Payload({**sparse.parts, **q.parts}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """Decode the kept values with the quantizer, then place them with the sparsifier."""
        locator = {k: v for k, v in p.parts.items() if k in LOCATORS}
        code = {k: v for k, v in p.parts.items() if k not in LOCATORS}
        if not locator:
            raise ValueError(f"{self.name}: expected the sparsifier's positions ('idx' or 'seed'), "
                             f"got parts {sorted(p.parts)}")
        k = self._kept(locator, p.numel)
        device = next(iter(locator.values())).device
        values = self.quantizer.decompress(Payload(code, (k,), p.dtype)) if k else \
            torch.zeros(0, dtype=p.dtype, device=device)
        return self.sparsifier.decompress(Payload({**locator, "val": values.to(p.dtype)}, p.shape, p.dtype))

    def payload_bytes(self, shape, dtype=torch.float32, **assumed) -> int:
        """The sparsifier's payload without its values, with the quantizer's code of the k values."""
        k = self.sparsifier.kept_count(shape, **assumed)
        located = self.sparsifier.payload_bytes(shape, dtype, **assumed) - k * dtype.itemsize \
            - (header_bytes(0, ["val"]) - header_bytes(0, []))  # header and positions (or seed), no "val"
        if not k:
            return located
        return located + self.quantizer.payload_bytes((k,), dtype) - header_bytes(1, [])  # its parts, one header

    def cost(self, shape, **assumed) -> Cost:
        """The sparsifier's encode, the quantizer's on the k values; decode: the quantizer's, then placing them."""
        d, k = max(math.prod(shape), 1), self.sparsifier.kept_count(shape, **assumed)
        inner = self.quantizer.cost((k,)) if k else Cost(NONE, NONE)
        encode = self.sparsifier.cost(shape, **assumed).encode + inner.encode * (k / d)
        return Cost(encode, inner.decode * (k / d) + self.sparsifier.decompress_work(shape, **assumed))

    def __repr__(self) -> str:
        return f"{self.sparsifier!r}+{self.quantizer!r}"


def chain(*parts: Compressor) -> SparseThenQuantize:
    """What the compressor registry builds for "a+b": exactly two parts, a valid pair."""
    if len(parts) != 2:
        names = "+".join(getattr(p, "name", "?") for p in parts)
        raise ValueError(f"cannot chain {len(parts)} compressors ({names!r}): a chain is {valid_chains()}, "
                         "two parts and then wrappers such as '+ef'")
    return SparseThenQuantize(*parts)

