"""Bits on the wire: fixed-width packing of small integers, and streams of variable-length
codes (the machinery under :mod:`commlab.compress.coding`).

* ``pack_bits(v, k)`` / ``unpack_bits(b, k, n)``: n integers of k bits in ceil(n k / 8) bytes
  (8 values fill k bytes, little-endian within the group); ``pack_trits``: values in {0,1,2}
  five to a byte (3^5 = 243 <= 256), 1.6 bits each.
* ``write_codes(code, length)``: codes of varying length back to back, most significant bit
  first, in ceil(total / 8) bytes; ``read_codes`` reads codes at given bit offsets. Both are
  vectorized through 64-bit words (numpy, on the CPU): a code starting at bit o lies in word
  o // 64 and may spill into the next. ``write_symbols`` writes symbols of a small alphabet
  from a code table, a few symbols per table lookup.
"""
from __future__ import annotations

import math

import numpy as np
import torch


def bits_for(levels: int) -> int:
    """Bits of a fixed-width code for the integers 0..levels: ceil(log2(levels + 1))."""
    return max(1, math.ceil(math.log2(levels + 1)))


# ----------------------------------------------------------------------------- fixed width
SMALL_BITS = 1 << 22  # up to here numpy's one-call bit table beats 8 shifted passes of torch ops


def _work_dtype(k: int):
    return torch.int32 if k <= 24 else torch.int64


def pack_bits(values: torch.Tensor, k: int) -> torch.Tensor:
    """Pack non-negative integers < 2^k (k in 1..56) into ceil(n k / 8) uint8 bytes."""
    if not isinstance(k, int) or not 1 <= k <= 56:
        raise ValueError(f"pack_bits: k={k!r} is out of range; valid: an integer in 1..56")
    n = values.numel()
    if k == 1 and values.device.type == "cpu":  # the same layout, by numpy
        bits = values.reshape(-1).to(torch.bool).numpy()
        return torch.from_numpy(np.packbits(bits, bitorder="little"))
    if values.device.type == "cpu" and k <= 24 and k != 8 and n * k <= SMALL_BITS:
        # the layout is one little-endian bit stream (value m in bits [m k, (m + 1) k), least
        # significant bit first), which numpy writes in one call from an n x k table of bits
        v = values.reshape(-1).numpy().astype(np.uint32)
        bits = (v[:, None] >> np.arange(k, dtype=v.dtype)) & 1
        return torch.from_numpy(np.packbits(bits.astype(np.uint8).reshape(-1), bitorder="little"))
    if k == 8:
        return values.reshape(-1).to(torch.uint8)
    v = values.reshape(-1).to(_work_dtype(k))
    groups = -(-n // 8)
    if groups * 8 != n:
        v = torch.cat([v, v.new_zeros(groups * 8 - n)])
    v = v.reshape(groups, 8).t().contiguous()  # row j: value j of every group
    out = torch.zeros(k, groups, dtype=v.dtype, device=v.device)  # row b: byte b of every group
    for j in range(8):  # value j occupies bits [j k, (j + 1) k) of the group's k bytes
        start = j * k
        for t in range((start % 8 + k + 7) // 8):
            shift = 8 * t - start % 8
            part = v[j] >> shift if shift >= 0 else v[j] << -shift
            out[start // 8 + t] |= part & 0xFF
    return out.t().to(torch.uint8).reshape(-1)[: -(-n * k // 8)]


def unpack_bits(data: torch.Tensor, k: int, n: int) -> torch.Tensor:
    """Inverse of :func:`pack_bits`: n integers of k bits, as int32 (int64 for k > 24)."""
    if data.numel() != -(-n * k // 8):
        raise ValueError(f"unpack_bits: {data.numel()} bytes cannot hold exactly {n} values of {k} bits")
    if k == 1 and data.device.type == "cpu":
        bits = np.unpackbits(data.reshape(-1).numpy(), count=n, bitorder="little")
        return torch.from_numpy(bits).to(torch.int32)
    if data.device.type == "cpu" and k <= 24 and k != 8 and n * k <= SMALL_BITS:  # read by numpy
        bits = np.unpackbits(data.reshape(-1).numpy(), count=n * k, bitorder="little").reshape(n, k)
        return torch.from_numpy(bits.astype(np.int32) @ (1 << np.arange(k, dtype=np.int32)))
    if k == 8:
        return data.reshape(-1).to(torch.int32)
    groups = -(-n // 8)
    need = groups * k
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


def pack_trits(values: torch.Tensor) -> torch.Tensor:
    """Values in {0, 1, 2}, five per byte: ceil(n / 5) bytes."""
    n = values.numel()
    v = values.reshape(-1).to(torch.int16)
    pad = -n % 5
    if pad:
        v = torch.cat([v, v.new_zeros(pad)])
    w = torch.tensor([1, 3, 9, 27, 81], dtype=torch.int16, device=v.device)
    return (v.reshape(-1, 5) * w).sum(1).to(torch.uint8)


def unpack_trits(data: torch.Tensor, n: int) -> torch.Tensor:
    b = data.to(torch.int16)
    digits = []
    for _ in range(5):
        digits.append(b % 3)
        b = b // 3
    return torch.stack(digits, 1).reshape(-1)[:n].long()


# ----------------------------------------------------------------------------- variable length
MAX_CODE_BITS = 56


def write_codes(code, length, at: int = 0) -> tuple[torch.Tensor, int]:
    """Concatenate codes (code i is the low length[i] bits of code[i], written most significant
    bit first), starting ``at`` bits into the stream (bits before are 0): (bytes, bits)."""
    code = np.asarray(code).astype(np.uint64, copy=False)
    length = np.asarray(length).astype(np.int64, copy=False)
    if length.size and int(length.max()) > MAX_CODE_BITS:
        raise ValueError(f"write_codes: a code of {int(length.max())} bits; at most {MAX_CODE_BITS}")
    end = np.cumsum(length)
    end += at
    nbits = int(end[-1]) if end.size else at
    start = end - length
    w = start >> 6
    e = start
    e &= 63
    e += length  # where the code ends, counted from the top of word w: 0..120
    shift = np.subtract(64, e, out=end)  # end is no longer needed; reuse its memory
    # as uint64 a negative shift is huge, and numpy shifts by >= 64 give 0: codes that
    # spill into word w + 1 get 0 here and are fixed below
    first = code << shift.view(np.uint64)
    spill = np.flatnonzero(e > 64)
    first[spill] = code[spill] >> (e[spill] - 64).astype(np.uint64)
    words = torch.zeros(nbits // 64 + 2, dtype=torch.int64)
    # codes occupy disjoint bits, so adding them is OR-ing them (no carries)
    words.index_add_(0, torch.from_numpy(w), torch.from_numpy(first.view(np.int64)))
    if spill.size:
        rest = code[spill] << (128 - e[spill]).astype(np.uint64)
        words.index_add_(0, torch.from_numpy(w[spill] + 1), torch.from_numpy(rest.view(np.int64)))
    data = words.numpy().astype(">i8").view(np.uint8)[: (nbits + 7) // 8]
    return torch.from_numpy(data.copy()), nbits


def write_symbols(symbols, codes, lengths, at: int = 0) -> tuple[torch.Tensor, int]:
    """:func:`write_codes` for symbols of a small alphabet with code table (codes, lengths):
    g consecutive symbols are looked up as one code of a table of (A + 1)^g entries (<= 2^16),
    which writes the same bits with g times fewer codes."""
    sym = np.asarray(symbols).reshape(-1)
    codes = np.asarray(codes, np.uint64)
    lengths = np.asarray(lengths, np.int64)
    a = codes.size + 1  # one extra symbol of length 0 pads the last group
    longest = max(int(lengths.max()) if lengths.size else 1, 1)
    g = 1
    while g < 4 and a ** (g + 1) <= 1 << 16 and (g + 1) * longest <= MAX_CODE_BITS:
        g += 1
    if g == 1:
        return write_codes(codes[sym], lengths[sym], at)
    c1, l1 = np.append(codes, 0).astype(np.uint64), np.append(lengths, 0)
    cg, lg = c1, l1
    for _ in range(g - 1):  # table of g-symbol groups: codes side by side, first symbol first
        cg = ((cg[:, None] << l1[None, :].astype(np.uint64)) | c1[None, :]).reshape(-1)
        lg = (lg[:, None] + l1[None, :]).reshape(-1)
    n = sym.size
    padded = np.full(-(-n // g) * g, a - 1, np.int32)
    padded[:n] = sym
    groups = padded.reshape(-1, g)
    index = groups[:, 0].copy()
    for j in range(1, g):
        index *= a
        index += groups[:, j]
    return write_codes(cg[index], lg[index], at)


def words(raw: np.ndarray) -> np.ndarray:
    """Bytes as big-endian 64-bit words, with a zero word of slack at the end."""
    buf = np.zeros((raw.size // 8 + 2) * 8, np.uint8)
    buf[:raw.size] = raw
    return buf.view(">u8").astype(np.uint64)


def read_codes(words: np.ndarray, start, length) -> np.ndarray:
    """The codes of ``length`` bits starting at bit ``start`` of a stream read by :func:`words`."""
    start = np.asarray(start, np.int64)
    length = np.asarray(length, np.int64)
    w = start >> 6
    r = (start & 63).view(np.uint64)
    val = words[w]
    val <<= r
    w += 1
    nxt = words[w]
    nxt >>= np.subtract(64, r, out=r)  # r = 0: a shift by 64 gives 0
    val |= nxt
    val >>= np.subtract(64, length, out=w).view(np.uint64)
    return val
