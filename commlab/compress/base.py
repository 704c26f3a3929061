"""What every compressor shares: the :class:`Compressor` interface and the checks that give clear
errors (the wire form, :class:`Payload`, is :mod:`commlab.compress.payload`'s, re-exported here).

A compressor maps a tensor ``x`` to a :class:`Payload` (``compress``) and back to a tensor
``C(x)`` of x's shape and dtype (``decompress``). Unbiased compressors have E[C(x)] = x; the
others are meant to be used with error feedback (:mod:`commlab.compress.error_feedback`).

How the payloads of the N ranks are combined is the compressor's ``aggregation``:

* ``"sum"``: payloads can be added in compressed form (fp16/bf16 casts; rand-k with a shared
  seed, where every rank picks the same coordinates; PowerSGD factors). Each rank sends
  ``summable(x)`` through an all-reduce and decodes the sum with ``from_summed(s, like, N)``,
  which returns the average (1/N) sum_i C(x_i).
* ``"gather"``: payloads cannot be added; every rank all-gathers (or a parameter server
  receives) the payloads and ``combine(payloads)`` returns (1/N) sum_i decompress(p_i).
* ``"majority"``: signs, combined by ``combine`` as the elementwise majority vote
  sign(sum_i sign(x_i)) (Bernstein et al. 2018).

A compressor never talks to Comm: aggregating payloads over ranks is
:mod:`commlab.arch.aggregate`. One whose protocol needs a collective (PowerSGD's two
all-reduces, TernGrad's shared scaler, gTop-k's tree) names it in ``protocol`` and its
``aggregate`` method receives the collectives as arguments.

Randomized compressors take ``seed`` and count their calls, so a run is deterministic: call
t draws from a generator seeded by (seed, t). Give each rank its own seed (seed + rank) when
the noise should be independent across ranks (QSGD, TernGrad); compressors whose randomness
must agree across ranks (rand-k indices, the rotation of rotated quantization) say so and
need the same seed everywhere.

Declarations, for timing a compressor on a device it does not run on (:mod:`commlab.compress.cost`,
the simulator): ``payload_bytes(shape, dtype)``, the exact ``compress(x).nbytes`` as a closed form
(keywords name what the size depends on when it depends on the data or the round);
``wire(shape, dtype)``, the collectives one rank takes part in to aggregate one tensor, as
(collective, bytes) pairs; ``cost(shape)``, the :class:`~commlab.compress.cost.Cost` of one encode
and one decode on a GPU; ``combine_work(shape, n)``, what ``combine`` of n payloads costs.

Non-finite inputs are refused: ``compress`` raises ValueError naming the compressor when x
holds NaN or Inf (a quantizer would otherwise scale by an infinite norm and send garbage).
"""
from __future__ import annotations

import math

import torch

from .. import checks
from . import cost as costs
from .payload import Payload, header_bytes  # noqa: F401 - the wire form, re-exported for the compressors

AGGREGATIONS = ("sum", "gather", "majority")
COLLECTIVES = ("allreduce", "allgather", "tree")  # what ``wire`` may name
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

def work(t: torch.Tensor) -> torch.Tensor:
    """t flattened, in the precision compressors compute in: float64 stays, others float32."""
    return t.reshape(-1).to(torch.float64 if t.dtype == torch.float64 else torch.float32)


def restore(flat: torch.Tensor, p: "Payload") -> torch.Tensor:
    """A flat decoded tensor back in the payload's original shape and dtype."""
    return flat.reshape(p.shape).to(p.dtype)


# ----------------------------------------------------------------------------- checks
def check_tensor(t, who: str) -> torch.Tensor:
    """A floating-point tensor with no NaN/Inf, else TypeError/ValueError naming ``who``."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{who}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{who}: expected a floating-point tensor (float16, bfloat16, float32, float64), "
                        f"got {t.dtype}")
    # a finite sum proves every entry finite (NaN and Inf propagate) and costs a tenth of
    # isfinite(t).all(); only a sum that overflows or hits a NaN/Inf needs the full check
    if t.numel() and not bool(torch.isfinite(t.sum())) and not bool(torch.isfinite(t).all()):
        bad = int((~torch.isfinite(t)).sum())
        raise ValueError(f"{who}: input holds {bad} NaN/Inf value(s); compressors need finite tensors "
                         f"(check the loss and learning rate)")
    return t


def check_ratio(ratio, who: str, what: str = "ratio") -> float:
    """The ratio as a float in (0, 1], else ValueError naming the value and the range."""
    if not checks.is_number(ratio) or not 0 < ratio <= 1:
        raise ValueError(f"{who}: {what}={ratio!r} is out of range; valid: 0 < {what} <= 1")
    return float(ratio)


def check_int(value, who: str, what: str, low: int = 1, high: int | None = None) -> int:
    """An integer in [low, high], else ValueError naming the value and the range."""
    if not checks.is_int(value) or value < low or (high is not None and value > high):
        raise ValueError(f"{who}: {what}={value!r} is out of range; valid: {checks.int_range(low, high)}")
    return value


def check_levels(levels, who: str, high: int | None = None) -> int:
    """A number of quantization levels: an integer in [1, high], else ValueError."""
    return check_int(levels, who, "levels", 1, high)


def check_rank(rank, who: str) -> int:
    """A low-rank budget: an integer >= 1, else ValueError."""
    return check_int(rank, who, "rank", 1)


def check_number(value, who: str, what: str, low: float, high: float, low_open=False, high_open=False) -> float:
    """A real number in the given (half-)open interval, else ValueError naming value and range."""
    ok = checks.is_number(value) and math.isfinite(value)
    ok = ok and (value > low if low_open else value >= low) and (value < high if high_open else value <= high)
    if not ok:
        rng = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"{who}: {what}={value!r} is out of range; valid: {what} in {rng}")
    return float(value)


def mix(*words: int) -> int:
    """A well-spread 63-bit seed from integers (splitmix64 steps), so that nearby seeds and
    calls give unrelated random streams (Mersenne Twister streams from nearby seeds start
    out correlated)."""
    z = 0x9E3779B97F4A7C15
    for w in words:
        z = (z ^ (w & 0xFFFFFFFFFFFFFFFF)) + 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & 0xFFFFFFFFFFFFFFFF
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB & 0xFFFFFFFFFFFFFFFF
        z ^= z >> 31
    return z >> 1


# ----------------------------------------------------------------------------- interface
class Compressor:
    """Base class. Subclasses set ``name``, ``unbiased``, ``aggregation`` and implement
    ``compress(t, key=None) -> Payload`` and ``decompress(p) -> Tensor``.

    ``key`` names the tensor (a parameter's name) for compressors with state per tensor
    (momentum, error feedback, shifts); stateless ones ignore it. ``decompress`` returns a
    tensor of the original shape and dtype on the payload's device.
    """

    name = "compressor"
    unbiased = False
    # a contraction of quality omega, E ||C(x) - x||^2 <= (1 - omega) ||x||^2 (top-k, scaled sign,
    # casts): what CHOCO-SGD needs; an unbiased compressor with ``theta(shape)``, its variance
    # (E ||C(x) - x||^2 <= theta ||x||^2), becomes one when scaled by 1 / (1 + theta), with
    # omega = 1 / (1 + theta) (commlab.decentral.contraction; notation of book/notation.md)
    contraction = False
    aggregation = "gather"
    no_error_feedback = None  # a reason, where wrapping in "+ef" would be wrong
    # a protocol of its own (PowerSGD: "powersgd", gTop-k: "gtopk", TernGrad: "shared_scale"):
    # its ``aggregate`` receives the collectives it needs as arguments (commlab.arch.aggregate)
    protocol = None
    # what the rulebook (commlab.rules) reads besides ``protocol`` and ``aggregation``:
    inner = None  # the compressor it wraps (error feedback), or None
    keeps_round_state = False  # its ``combine`` keeps state across rounds (DIANA's shifts, LAQ's sums)
    applies_momentum = False  # it applies momentum itself (DGC's momentum correction)
    whole_tensors = False  # it compresses each weight as a whole (PowerSGD's matrices): no schedule may cut one
    remembers_error = False  # it keeps the error of what it sent (the "+ef" wrapper)

    @property
    def base(self) -> "Compressor":
        """The compressor at the core of any wrappers: itself, or what it wraps, unwrapped."""
        return self if self.inner is None else self.inner.base

    def __init__(self, seed: int = 0):
        if not checks.is_int(seed):
            raise ValueError(f"{self.name}: seed={seed!r} must be an integer")
        self.seed = seed
        self.calls = 0

    # -- randomness: call t of a compressor draws from generator(seed, t)
    def generator(self, device, stream: int = 0) -> torch.Generator:
        """A generator for this call; ``stream`` separates independent draws within one call."""
        g = torch.Generator(device=device)
        g.manual_seed(mix(self.seed, self.calls, stream))
        return g

    def tick(self) -> None:
        """Count one call, so that the next call's :meth:`generator` draws a fresh stream."""
        self.calls += 1

    def check(self, t) -> torch.Tensor:
        """The tensor itself if it is a finite floating-point tensor, else TypeError/ValueError."""
        return check_tensor(t, self.name)

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """The :class:`Payload` that stands for ``t`` on the wire (subclasses implement it)."""
        raise NotImplementedError

    def decompress(self, p: Payload) -> torch.Tensor:
        """C(x): the tensor a payload stands for, in its original shape and dtype."""
        raise NotImplementedError

    def __call__(self, t: torch.Tensor, key=None) -> torch.Tensor:
        """C(t): compress then decompress (what the receiver would see)."""
        return self.decompress(self.compress(t, key))

    # -- "sum" aggregation
    def summable(self, t: torch.Tensor, key=None) -> torch.Tensor:
        """The tensor this rank adds into the all-reduce (only for aggregation == "sum")."""
        raise TypeError(f"{self.name} aggregates by {self.aggregation!r}, not by summing in compressed form")

    def from_summed(self, s: torch.Tensor, like: torch.Tensor, count: int) -> torch.Tensor:
        """The average (1/count) sum_i C(x_i), shaped and typed like ``like``, from the sum of
        ``count`` ranks' ``summable`` tensors."""
        raise TypeError(f"{self.name} aggregates by {self.aggregation!r}, not by summing in compressed form")

    # -- "gather" / "majority" aggregation
    def decoded(self, p: Payload) -> torch.Tensor:
        """``decompress(p)``, computed once per compressor class for a payload that ranks share
        (:meth:`Payload.shared_from_bytes`; all ranks of one aggregation use one spec) and
        then shared: the caller reads it and never writes it."""
        if p.decodings is None:
            return self.decompress(p)
        values, lock = p.decodings
        with lock:  # the first rank decodes, the others wait for its result
            if type(self) not in values:
                values[type(self)] = self.decompress(p)
            return values[type(self)]

    def combine(self, payloads: list, key=None) -> torch.Tensor:
        """The aggregate of every rank's payload: the mean of the decompressed tensors
        ("gather"), or the elementwise majority vote of their signs ("majority"). ``key`` is
        for compressors whose aggregation keeps state per tensor (DIANA's shift, LAQ's sum)."""
        if not payloads:
            raise ValueError(f"{self.name}: combine needs at least one payload")
        total = None
        for p in payloads:
            x = self.decoded(p)
            if self.aggregation == "majority":
                x = torch.sign(x)
            total = x.to(torch.float32, copy=True) if total is None else total.add_(x.float())
        first = payloads[0]
        if self.aggregation == "majority":
            return torch.sign(total).to(first.dtype)
        return total.div_(len(payloads)).to(first.dtype)

    # -- declarations: bytes on the wire and arithmetic, without building a tensor
    def payload_bytes(self, shape, dtype=torch.float32) -> int:
        """``compress(x).nbytes`` for a tensor x of ``shape`` and ``dtype``, as a closed form."""
        raise NotImplementedError(f"{self.name} does not declare its payload_bytes")

    def wire_bytes(self, shape, dtype=torch.float32) -> int:
        """The former name of :meth:`payload_bytes`, kept for its callers."""
        return self.payload_bytes(shape, dtype)

    def summed_bytes(self, shape, dtype=torch.float32) -> int:
        """Bytes of ``summable(x)`` (only for aggregation == "sum"): what the all-reduce carries."""
        raise TypeError(f"{self.name} aggregates by {self.aggregation!r}, not by summing in compressed form")

    def wire(self, shape, dtype=torch.float32) -> tuple:
        """The collectives one rank takes part in to aggregate one tensor of ``shape`` and
        ``dtype`` (as :mod:`commlab.arch.aggregate` does), as ((collective, bytes), ...): an
        all-reduce of the summable tensor ("sum"), else an all-gather of the payloads."""
        if self.aggregation == "sum":
            return (("allreduce", self.summed_bytes(shape, dtype)),)
        return (("allgather", self.payload_bytes(shape, dtype)),)

    def cost(self, shape) -> costs.Cost:
        """One encode and one decode of an fp32 tensor of ``shape`` on a GPU (:mod:`.cost`)."""
        raise NotImplementedError(f"{self.name} does not declare its cost")

    def decompress_work(self, shape, **assumed) -> costs.KernelWork:
        """``decompress`` of one payload: ``cost(shape).decode``, except for "sum" compressors,
        whose decode is ``from_summed`` (``assumed``: the keywords of a data-dependent ``cost``)."""
        return self.cost(shape, **assumed).decode

    def combine_work(self, shape, n: int) -> costs.KernelWork:
        """What ``combine`` of n payloads costs: n decodes, each added into an fp32 total, and
        the mean (or the signs and their majority vote)."""
        return costs.combine(self.decompress_work(shape), n, self.aggregation == "majority")

    shown: tuple = ()  # (attribute, default) pairs that repr prints where they differ from the default

    def __repr__(self) -> str:
        """The name, with the arguments in :attr:`shown` that differ from their defaults (a spec of :func:`get`)."""
        args = [f"{a}={getattr(self, a)!r}" for a, default in self.shown if getattr(self, a) != default]
        return f"{self.name}({', '.join(args)})" if args else self.name
