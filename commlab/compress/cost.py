"""What a compressor's arithmetic costs on a device: :class:`KernelWork` and :class:`Cost`, and the
declarations that several compressors share (the NaN/Inf check, bit packing, top-k, the sparse
payload's positions and its densify).

Every compressor declares ``cost(shape) -> Cost``: one encode and one decode of an fp32 tensor
of that shape as they run on a GPU (the fused bit packing, ``torch.topk``, no numpy), counted by
hand, one term per kernel or group of kernels:

* ``passes``: memory traffic, (bytes read + bytes written) / (4 d), d the number of elements of
  the shape given to ``cost`` (|x| on fp32: read 4, write 4 bytes per element, 2 passes; a cast
  fp32 -> fp16 1.5; x < 0 into bools 1.25);
* ``launches``: kernels launched (a cast, an elementwise op, a reduction: one each), each
  costing a device's launch latency however small;
* ``select``: the elements a top-k selection runs over (``torch.topk``, a radix select on a GPU:
  several passes of its own, which a device model times from this count);
* ``syncs``: host round trips (``.item()``, ``float(t)``, ``bool(t)``, a ``nonzero`` whose size
  the host must learn);
* ``flops``: matrix products' arithmetic, 2 m n k each (PowerSGD's, ATOMO's, the rotation's
  Hadamard products), for the few compressors that are not bound by memory traffic alone;
* ``host``: passes the host makes over the tensor, for the entropy codes (Elias, Huffman) that
  run on numpy by design: the data goes to the host and back (the syncs), and the host codes it.

``passes`` and ``host`` are relative to d; the other four are absolute counts. ``w * f``
rescales the relative ones, for work on f d elements expressed in passes over d (a chain's
quantizer codes k of d values: its passes times k / d); ``w.repeat(n)`` is n runs of it.
The oracle is tests/cost_count.py: the aten ops that encode and decode dispatch on CPU tensors
with the GPU's paths forced, counted the same way.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KernelWork:
    """The device work of one piece of a compressor (see the module docstring for the units)."""

    passes: float = 0.0   # memory traffic: (bytes read + written) / (4 d)
    launches: int = 0     # kernels launched
    select: float = 0.0   # elements a top-k selection (radix select) runs over
    syncs: int = 0        # host round trips
    flops: float = 0.0    # matrix products' floating-point operations
    host: float = 0.0     # passes over the tensor on the host (numpy entropy coding)

    def __add__(self, other: "KernelWork") -> "KernelWork":
        if not isinstance(other, KernelWork):
            return NotImplemented
        return KernelWork(self.passes + other.passes, self.launches + other.launches, self.select + other.select,
                    self.syncs + other.syncs, self.flops + other.flops, self.host + other.host)

    def __radd__(self, other):
        return self if other == 0 else NotImplemented  # sum(works) starts from 0

    def __mul__(self, f: float) -> "KernelWork":
        """The same kernels over f times the elements, in passes over the same d: the relative
        terms (passes, host) scale, the counts (launches, select, syncs, flops) do not."""
        return KernelWork(self.passes * f, self.launches, self.select, self.syncs, self.flops, self.host * f)

    __rmul__ = __mul__

    def repeat(self, n: int) -> "KernelWork":
        """n runs of this work: every term n times."""
        return KernelWork(self.passes * n, self.launches * n, self.select * n, self.syncs * n, self.flops * n, self.host * n)


@dataclass(frozen=True)
class Cost:
    """One encode (what the sender runs: ``compress``, or ``summable`` for "sum" compressors, or
    a protocol's own local steps, error feedback's bookkeeping included) and one decode (one
    payload's ``decompress``, or ``from_summed`` of the summed tensor)."""

    encode: KernelWork
    decode: KernelWork

    @property
    def total(self) -> KernelWork:
        return self.encode + self.decode


NONE = KernelWork()
# check_tensor (and the sums that replace it): x.sum(), isfinite of the sum (abs, ne, eq, mul on
# one element), bool(): the host waits for the answer
CHECK = KernelWork(passes=1, launches=5, syncs=1)
FINITE = KernelWork(launches=4)  # isfinite of a small tensor (bucket norms, a scale): four tiny kernels


def tiny(launches: int) -> KernelWork:
    """Kernels on a handful of elements (scalars, per-bucket values, small tables): launches only."""
    return KernelWork(launches=launches)


# ----------------------------------------------------------------------------- bit packing
def pack_codes(bits: int, n: int, d: int, code_bytes: int = 1) -> KernelWork:
    """:func:`commlab.compress.bitpack.pack_bits` of n codes of ``bits`` bits held in
    ``code_bytes`` bytes each (bools or uint8: 1) on the GPU's path, in passes over d."""
    f = n / d
    if bits >= 8:
        return _pack_wide(bits, n, d, code_bytes)
    w = KernelWork(f * (code_bytes + 1) / 4, 1) if code_bytes != 1 else NONE  # codes to one byte each
    if n % 8:
        w += KernelWork(f * 0.5, 2)  # zero padding to whole groups of 8 (new_zeros, cat)
    if bits == 1:  # 8 bytes of 0/1 as one int64 word: multiply, shift the top byte down, to uint8
        return w + KernelWork(f * (0.5 + 0.5 + 9 / 32), 3)
    return (w + KernelWork(f * 3 * (0.5 + 0.5 + 0.5 + 0.75), 12)  # three closing steps: &, >>, &, | over words
            + KernelWork(f * bits / 16, 1))  # the first `bits` bytes of every word gathered into the stream


def _touches(bits: int) -> int:
    """(value, byte) pairs of a group of 8 wide codes: value j touches bytes of bits [j k, (j + 1) k)."""
    return sum((j * bits % 8 + bits + 7) // 8 for j in range(8))


def _pack_wide(bits: int, n: int, d: int, code_bytes: int) -> KernelWork:
    """Codes of 8 bits and more (no default uses them): a cast, or rows of n / 8 int32 words, one
    shift, mask and or per byte a value touches."""
    f = n / d
    if bits == 8:
        return KernelWork(f * (code_bytes + 1) / 4, 1) if code_bytes != 1 else NONE  # to uint8
    return (KernelWork(f * (code_bytes + 4) / 4, 1) if code_bytes != 4 else NONE) + (  # codes to int32
        (KernelWork(f * 1.0, 2) if n % 8 else NONE)  # zero padding to whole groups (new_zeros, cat)
        + KernelWork(f * 2, 1)  # transposed: row j holds value j of every group
        + KernelWork(f * bits / 8, 1)  # zeroed rows of output words
        + KernelWork(f * (0.25 + 0.25 + 0.375 + 0.25), 4).repeat(_touches(bits))  # >>, & 0xFF, |=, the row written back
        + KernelWork(f * bits * 5 / 32, 1) + KernelWork(f * bits / 16, 1))  # to uint8, transposed back into bytes


def unpack_codes(bits: int, n: int, d: int, table: bool = False) -> KernelWork:
    """:func:`commlab.compress.bitpack.unpack_bits` of n codes (int32), and with ``table`` the
    lookup values[code] (fp32 out), on the GPU's path, in passes over d."""
    f = n / d
    if bits == 1:  # every byte shifted by 0..7 into a byte per bit, the low bit kept, to int32
        w = KernelWork(f * (9 / 32 + 0.5), 2) + KernelWork(f * 1.25, 1)
    elif bits < 8:
        w = (KernelWork(f * 0.25, 1)  # zeroed words, one per 8 codes
             + KernelWork(f * bits / 16, 1)  # the packed bytes copied into the words' low bytes
             + KernelWork(f * 3 * (0.5 + 0.5 + 0.5 + 0.75), 12)  # three opening steps: &, &, <<, |
             + KernelWork(f * 1.25, 1))  # one byte per code to int32
        if n % 8:
            w += KernelWork(f * bits / 16, 2)  # the bytes padded to whole groups (new_zeros, cat)
    elif bits == 8:
        w = KernelWork(f * 1.25, 1)  # bytes to int32
    else:  # bytes to int32, padded, transposed, zeroed rows; per (value, byte) a shift and an or
        w = (KernelWork(f * bits * 5 / 32, 1) + (KernelWork(f * bits / 4, 2) if n % 8 else NONE) + KernelWork(f * bits / 4, 1)
             + KernelWork(f, 1) + KernelWork(f * (0.25 + 0.375 + 0.25), 3).repeat(_touches(bits))  # <<, |=, written back
             + KernelWork(f * (0.375 + 0.25), 2).repeat(8)  # &= mask, written back
             + KernelWork(f * 2, 1))
    return w + KernelWork(f * 2, 1) if table else w  # values[code]: int32 in, fp32 out (the table stays in cache)


def pack_signs(n: int, d: int) -> KernelWork:
    """:func:`commlab.compress.bitpack.pack_signs` of n fp32 values: x < 0 as bools, packed."""
    return KernelWork(n / d * 1.25, 1) + pack_codes(1, n, d)


def unpack_signs(n: int, d: int, table: bool = False) -> KernelWork:
    """:func:`commlab.compress.bitpack.unpack_signs` of n signs: the bits as bools, and with a
    table of two values one select into fp32."""
    f = n / d
    w = KernelWork(f * (9 / 32 + 0.5), 2)  # every byte shifted by 0..7, the low bit kept
    return w + KernelWork(f * 1.25, 1) if table else w  # where(bit, values[1], values[0])


def pack_trits(n: int, d: int) -> KernelWork:
    """:func:`commlab.compress.bitpack.pack_trits`: five uint8 trits per byte by Horner's rule."""
    f = n / d
    w = KernelWork(f * 0.5, 2) if n % 5 else NONE  # zero padding to whole groups of 5 (new_zeros, cat)
    return w + KernelWork(f * (0.1 + 3 * (0.15 + 0.1) + 0.15), 8)  # v4 * 3, then (+= v_j, *= 3) x 3, += v0


def unpack_trits(n: int, d: int) -> KernelWork:
    """:func:`commlab.compress.bitpack.unpack_trits` with a table of 3 values: five per lookup."""
    f = n / d
    return (tiny(1)  # the 256 x 5 table of values
            + KernelWork(f * 0.25, 1)  # bytes to int32 indices
            + KernelWork(f * 1.2, 1))  # index_select of a row of 5 values per byte (the table stays in cache)


# ----------------------------------------------------------------------------- sparse payloads
def index_bytes(d: int) -> int:
    """Bytes per position on the wire (as :func:`commlab.compress.sparse.index_bytes`)."""
    return 2 if d <= 1 << 16 else 4 if d <= 1 << 31 else 8


def topk(k: int, d: int) -> KernelWork:
    """|x| and ``torch.topk`` of it: the radix select over d, writing k values and k positions."""
    return KernelWork(2, 1) + KernelWork(1 + 3 * k / d, 1, select=d)


def gather(k: int, d: int) -> KernelWork:
    """x.index_select(0, idx) of k fp32 values: read int64 positions and values, write values."""
    return KernelWork(4 * k / d, 1)


def positions_out(k: int, d: int) -> KernelWork:
    """int64 positions to their wire form (:func:`commlab.compress.sparse.encode_indices`)."""
    f = k / d
    if index_bytes(d) == 2:
        return KernelWork(f * 4, 1) + KernelWork(f * 2.5, 1)  # minus 32768 in int64, then to int16
    return KernelWork(f * 3, 1) if index_bytes(d) == 4 else NONE  # to int32 (int64 stays)


def positions_in(k: int, d: int) -> KernelWork:
    """Wire positions back to int64 (:func:`commlab.compress.sparse.decode_indices`)."""
    f = k / d
    if index_bytes(d) == 2:
        return KernelWork(f * 2.5, 1) + KernelWork(f * 4, 1)  # int16 to int64, then plus 32768
    return KernelWork(f * 3, 1) if index_bytes(d) == 4 else NONE


def densify(k: int, d: int) -> KernelWork:
    """:func:`commlab.compress.sparse.densify` of k fp32 values: zeros, then one scatter."""
    return KernelWork(1, 1) + positions_in(k, d) + KernelWork(4 * k / d, 1)  # zeros(d); positions; scatter idx + val


def combine(decode: KernelWork, n: int, majority: bool = False) -> KernelWork:
    """:meth:`commlab.compress.base.Compressor.combine` of n payloads, each decoded by ``decode``:
    the first copied into an fp32 total, the others added, then the mean (or, for a majority
    vote, the sign of every decoded tensor and of the total)."""
    each = decode + KernelWork(2, 1) if majority else decode  # torch.sign of every decoded tensor
    return each.repeat(n) + KernelWork(2, 1) + KernelWork(3, 1).repeat(n - 1) + KernelWork(2, 1)  # copy, adds, div_ or sign
