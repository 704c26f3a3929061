"""Bits on the wire, variable length: streams of codes of different lengths (the machinery of
the entropy codes in :mod:`commlab.compress.coding`).

* ``write_codes(code, length)``: codes of varying length back to back, most significant bit
  first, in ceil(total / 8) bytes; ``read_codes`` reads codes at given bit offsets. Both are
  vectorized through 64-bit words (numpy, on the CPU: a stream of codes is sequential by
  nature, so an entropy-coded payload is written and read on the host): a code starting at bit
  o lies in word o // 64 and may spill into the next.
* ``write_symbols`` writes symbols of a small alphabet from a code table, a few symbols per
  table lookup.
"""
from __future__ import annotations

import numpy as np
import torch

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
