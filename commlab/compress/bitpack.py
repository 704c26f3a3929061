"""Bits on the wire: fixed-width packing of small integers (under :mod:`commlab.compress.coding`).

* ``pack_bits(v, k)`` / ``unpack_bits(b, k, n)``: n integers of k bits in ceil(n k / 8) bytes
  (8 values fill k bytes, little-endian within the group); ``unpack_bits(b, k, n, values)``
  decodes straight to values[code]; ``pack_signs(x)`` packs x < 0 and ``unpack_signs`` reads
  k = 1 as bools or as values from a table; ``pack_trits``: values in {0,1,2} five to a byte
  (3^5 = 243 <= 256), 1.6 bits each.
  Cost, all vectorized. On the CPU: k = 1 is one numpy ``packbits``/``unpackbits`` call; k < 8
  builds one 64-bit word per group of 8 values (8 shift-or passes over d/8 words, then a byte
  view), and with ``values`` reads two codes per lookup in a table of the 4^k pairs; trits are
  4 multiply-add passes over d/5 bytes (Horner, on every device). On a GPU (any device but the
  CPU) nothing leaves the device and no value is widened: the 8 one-byte codes of a group are
  read as one 64-bit word; signs are gathered into a byte by one multiply (k = 1), other widths
  by closing the gaps between the fields in three mask-shift-or steps over d/8 words, and
  unpacking runs the steps backwards. Signs and trits decode straight into their values by one
  lookup per byte in a 256 x 8 (256 x 5) table: one pass writing the output.
Streams of variable-length codes are :mod:`commlab.compress.bitstream`'s.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .. import checks


def bits_for(levels: int) -> int:
    """Bits of a fixed-width code for the integers 0..levels: ceil(log2(levels + 1))."""
    return max(1, math.ceil(math.log2(levels + 1)))


# ----------------------------------------------------------------------------- fixed width
SMALL_BITS = 1 << 22  # up to here numpy's one-call bit table beats 8 shifted passes of torch ops;
# for k < 8 only up to SMALL_BITS >> 5, beyond which the 64-bit words win (20000 values of 6 bits:
# 0.28 ms against numpy's 0.43 ms; 8M values: 23 ms against 160 ms)


def _by_numpy(device, k: int, n: int) -> bool:
    return not _fused(device) and k <= 24 and k != 8 and n * k <= (SMALL_BITS if k > 8 else SMALL_BITS >> 5)


def _work_dtype(k: int):
    return torch.int32 if k <= 24 else torch.int64


def _groups(v: torch.Tensor, n: int) -> torch.Tensor:
    """The n entries of the flat v, zero-padded to a multiple of 8."""
    return torch.cat([v, v.new_zeros(-n % 8)]) if n % 8 else v


def _fused(device) -> bool:
    """Whether to pack with the fused kernels (every device but the CPU, where numpy's one
    call and the word loops are faster)."""
    return device.type != "cpu"


def pack_fused(values: torch.Tensor, k: int) -> torch.Tensor:
    """:func:`pack_bits` for k < 8 in whole-word integer ops alone: the GPU's path (the same bytes
    on any device). The 8 codes of a group, one per byte, are read as one 64-bit word; k = 1
    gathers the 8 low bits with one multiply (bit j of the product's top byte is byte j's bit),
    other k close the gaps between the fields in three steps (pairs, quads, the group), each two
    masks, a shift and an or over d/8 words."""
    n = values.numel()
    groups = -(-n // 8)
    v = _groups(values.reshape(-1), n)
    b = v.view(torch.uint8) if v.dtype == torch.bool else v.to(torch.uint8)  # one code per byte
    if b.storage_offset() % 8:  # a word view needs an aligned start
        b = b.clone()
    w = b.view(torch.int64)
    if k == 1:
        return ((w * GATHER_BITS) >> 56).to(torch.uint8)  # the top byte; to uint8 keeps its low 8 bits
    for low, high, shift in _steps(k):
        w = (w & low) | ((w >> shift) & high)
    return w.view(torch.uint8).view(groups, 8)[:, :k].reshape(-1)[: -(-n * k // 8)]


def unpack_fused(data: torch.Tensor, k: int, n: int) -> torch.Tensor:
    """:func:`unpack_bits` for k < 8 in whole-word ops: the three steps of :func:`pack_fused`
    backwards open each group's word into one byte per code (int32 out)."""
    if k == 1:
        return _bits(data, n).to(torch.int32)
    w = _group_words(data, k, n)
    for low, high, shift in reversed(_steps(k)):
        w = (w & low) | ((w & high) << shift)
    return w.view(torch.uint8)[:n].to(torch.int32)


# bit j of the 64-bit product w * GATHER_BITS, j >= 56, is the low bit of byte j - 56 of w when
# every byte of w is 0 or 1: the sum of 2^(56 - 7j) puts byte j's bit 8j at 56 + j, and every
# other product term lands below bit 56 without carries (the classic 8-bools-to-a-byte multiply)
GATHER_BITS = sum(1 << (56 - 7 * j) for j in range(8))


def _lanes(width: int, spacing: int, at: int = 0) -> int:
    """A 64-bit mask with ``width`` ones at bit ``at`` of every lane of ``spacing`` bits."""
    return sum(((1 << width) - 1) << (lane + at) for lane in range(0, 64, spacing))


def _steps(k: int) -> list:
    """(low mask, high mask, shift) of each closing step for k-bit fields one per byte: fields of
    f = k, 2k, 4k bits sit at the start and the middle of lanes of 16, 32, 64 bits; shifting the
    word right by (lane / 2 - f) brings the middle field down beside the first."""
    return [(_lanes(f, lane), _lanes(f, lane, f), lane // 2 - f) for f, lane in ((k, 16), (2 * k, 32), (4 * k, 64))]


def pack_bits(values: torch.Tensor, k: int) -> torch.Tensor:
    """Pack non-negative integers < 2^k (k in 1..56) into ceil(n k / 8) uint8 bytes."""
    if not checks.is_int(k) or not 1 <= k <= 56:
        raise ValueError(f"pack_bits: k={k!r} is out of range; valid: an integer in 1..56")
    n = values.numel()
    if k < 8 and _fused(values.device):
        return pack_fused(values, k)
    if k == 1:  # the same layout, by numpy
        bits = values.reshape(-1).to(torch.bool).numpy()
        return torch.from_numpy(np.packbits(bits, bitorder="little"))
    if _by_numpy(values.device, k, n):
        # the layout is one little-endian bit stream (value m in bits [m k, (m + 1) k), least
        # significant bit first), which numpy writes in one call from an n x k table of bits
        v = values.reshape(-1).numpy().astype(np.uint32)
        bits = (v[:, None] >> np.arange(k, dtype=v.dtype)) & 1
        return torch.from_numpy(np.packbits(bits.astype(np.uint8).reshape(-1), bitorder="little"))
    if k == 8:
        return values.reshape(-1).to(torch.uint8)
    groups = -(-n // 8)
    if k < 8:  # a group of 8 values is one 64-bit word, value j in bits [j k, (j + 1) k)
        v = _groups(values.reshape(-1), n).view(groups, 8)
        w = torch.empty(groups, dtype=torch.int64, device=v.device).copy_(v[:, 0])  # new, dense
        for j in range(1, 8):
            w |= v[:, j].to(torch.int64) << (j * k)
        # the word's first k bytes are the group's k bytes of the stream (a little-endian host)
        return w.view(torch.uint8).view(groups, 8)[:, :k].reshape(-1)[: -(-n * k // 8)]
    v = _groups(values.reshape(-1).to(_work_dtype(k)), n)
    v = v.reshape(groups, 8).t().contiguous()  # row j: value j of every group
    out = torch.zeros(k, groups, dtype=v.dtype, device=v.device)  # row b: byte b of every group
    for j in range(8):  # value j occupies bits [j k, (j + 1) k) of the group's k bytes
        start = j * k
        for t in range((start % 8 + k + 7) // 8):
            shift = 8 * t - start % 8
            part = v[j] >> shift if shift >= 0 else v[j] << -shift
            out[start // 8 + t] |= part & 0xFF
    return out.t().to(torch.uint8).reshape(-1)[: -(-n * k // 8)]


def _group_words(data: torch.Tensor, k: int, n: int) -> torch.Tensor:
    """For k < 8: every group's k bytes as the low bytes of one 64-bit word (see pack_bits)."""
    groups = -(-n // 8)
    raw = data.reshape(-1)
    if groups * k != raw.numel():
        raw = torch.cat([raw, raw.new_zeros(groups * k - raw.numel())])
    b = torch.zeros(groups, 8, dtype=torch.uint8, device=data.device)
    b[:, :k] = raw.view(groups, k)
    return b.view(torch.int64).view(groups)


def unpack_bits(data: torch.Tensor, k: int, n: int, values: torch.Tensor | None = None) -> torch.Tensor:
    """Inverse of :func:`pack_bits`: n integers of k bits, as int32 (int64 for k > 24); with a
    table ``values`` of 2^k entries, values[code] instead (for 1 < k < 8 on the word path, two
    codes per lookup in a table of the 4^k pairs, which skips writing the codes)."""
    if data.numel() != -(-n * k // 8):
        raise ValueError(f"unpack_bits: {data.numel()} bytes cannot hold exactly {n} values of {k} bits")
    if values is not None:
        if not 1 < k < 8 or _by_numpy(data.device, k, n) or _fused(data.device):
            return values.index_select(0, unpack_bits(data, k, n))
        pairs = torch.arange(1 << 2 * k, device=values.device)
        table = torch.stack([values[pairs & (1 << k) - 1], values[pairs >> k]], 1)
        w = _group_words(data, k, n)
        idx = torch.empty(w.numel(), 4, dtype=torch.int32, device=w.device)
        for j in range(4):  # pair j: values 2j and 2j + 1 of the group, bits [2 j k, (2 j + 2) k)
            idx[:, j] = (w >> (2 * j * k)) & ((1 << 2 * k) - 1)
        return table.index_select(0, idx.view(-1)).view(-1)[:n]
    if k < 8 and _fused(data.device):
        return unpack_fused(data, k, n)
    if k == 1:
        bits = np.unpackbits(data.reshape(-1).numpy(), count=n, bitorder="little")
        return torch.from_numpy(bits).to(torch.int32)
    if _by_numpy(data.device, k, n):  # read by numpy
        bits = np.unpackbits(data.reshape(-1).numpy(), count=n * k, bitorder="little").reshape(n, k)
        return torch.from_numpy(bits.astype(np.int32) @ (1 << np.arange(k, dtype=np.int32)))
    if k == 8:
        return data.reshape(-1).to(torch.int32)
    groups = -(-n // 8)
    need = groups * k
    if k < 8:
        w = _group_words(data, k, n)
        out = torch.empty(groups, 8, dtype=torch.int32, device=data.device)
        for j in range(8):
            out[:, j] = (w >> (j * k)) & ((1 << k) - 1)
        return out.view(-1)[:n]
    b = data.reshape(-1).to(_work_dtype(k))
    if need != b.numel():
        b = torch.cat([b, b.new_zeros(need - b.numel())])
    b = b.reshape(groups, k).t().contiguous()
    out = torch.zeros(8, groups, dtype=b.dtype, device=b.device)
    mask = (1 << k) - 1
    for j in range(8):
        start = j * k
        for t in range((start % 8 + k + 7) // 8):
            shift = 8 * t - start % 8
            byte = b[start // 8 + t]
            out[j] |= (byte << shift) if shift >= 0 else (byte >> -shift)
        out[j] &= mask
    return out.t().reshape(-1)[:n]


def pack_signs(x: torch.Tensor) -> torch.Tensor:
    """``pack_bits(x < 0, 1)`` of a float tensor; on the CPU numpy compares and packs (no
    torch bool tensor in between: faster than torch's comparison)."""
    if not _fused(x.device) and x.dtype in (torch.float32, torch.float64):
        return torch.from_numpy(np.packbits(np.less(x.detach().reshape(-1).numpy(), 0), bitorder="little"))
    return pack_bits(x.detach() < 0, 1)


# bit j of every byte b, and digit j of b in base 3: (b // 3^j) % 3, for lookups of whole bytes
BYTE_BITS = torch.tensor([[b >> j & 1 for j in range(8)] for b in range(256)])
SHIFTS = torch.arange(8, dtype=torch.uint8)
TRIT_DIGITS = torch.tensor([[b // 3 ** j % 3 for j in range(5)] for b in range(256)])
_TABLES: dict = {}


def _on(table: torch.Tensor, device) -> torch.Tensor:
    """A constant table on ``device``, copied there once (not once per call: a copy from the
    host waits for the device)."""
    key = (id(table), str(device))
    if key not in _TABLES:
        _TABLES[key] = table.to(device)
    return _TABLES[key]


def _bits(data: torch.Tensor, n: int) -> torch.Tensor:
    """The first n bits of the bytes ``data``, least significant first, as uint8 0/1: one
    broadcast shift-and-mask (the GPU's path)."""
    return ((data.reshape(-1, 1) >> _on(SHIFTS, data.device)) & 1).view(-1)[:n]


def _lookup(table: torch.Tensor, data: torch.Tensor, n: int) -> torch.Tensor:
    """Row data[i] of ``table`` for every byte, flattened to n entries (one index_select)."""
    return table.index_select(0, data.reshape(-1).to(torch.int32)).reshape(-1)[:n]


def unpack_signs(data: torch.Tensor, n: int, values: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`unpack_bits` for k = 1 as bools (on the CPU numpy's bytes, not copied); with a
    2-entry table ``values``, values[bit] instead: on the CPU one lookup of 8 entries per byte, on
    a GPU the bits and then one select."""
    if values is not None and not _fused(data.device):
        return _lookup(values[BYTE_BITS], data, n)
    if not _fused(data.device):
        bits = np.unpackbits(data.reshape(-1).numpy(), count=n, bitorder="little")
        return torch.from_numpy(bits).view(torch.bool)
    bits = _bits(data, n).view(torch.bool)
    # a GPU gathers rows of 8 values ten times slower than it selects (1.9 ms against 0.2 ms for
    # 25M values on an H200): the bits first, then one select
    return bits if values is None else torch.where(bits, values[1], values[0])


def pack_trits(values: torch.Tensor) -> torch.Tensor:
    """Values in {0, 1, 2}, five per byte, v0 + 3 v1 + 9 v2 + 27 v3 + 81 v4: ceil(n / 5) bytes."""
    n = values.numel()
    v = values.reshape(-1).to(torch.uint8)
    if n % 5:
        v = torch.cat([v, v.new_zeros(-n % 5)])
    v = v.view(-1, 5)
    out = v[:, 4] * 3  # Horner, in uint8: every partial sum is below 243
    for j in (3, 2, 1):
        out += v[:, j]
        out *= 3
    return out.add_(v[:, 0])


def unpack_trits(data: torch.Tensor, n: int, values: torch.Tensor | None = None) -> torch.Tensor:
    """The n trits of :func:`pack_trits` (int64); with a 3-entry table ``values``, values[trit]
    instead, by one lookup of 5 entries per byte."""
    table = _on(TRIT_DIGITS, data.device)
    return _lookup(table if values is None else values[table], data, n)
