"""Stochastic rotated quantization (Suresh et al. 2017, "Distributed Mean Estimation with
Limited Communication", pi_srk with variable-length coding pi_svk).

Per bucket of b = 2^m coordinates (the vector zero-padded to whole buckets):

    y = H D x / sqrt(b)       D = diag of b random signs, H the b x b Walsh-Hadamard matrix;
    q_i = stochastic rounding of (y_i - min y) / (max y - min y) * s to 0..s (E q_i = that);
    decoded: x' = D H y' / sqrt(b),  y'_i = min y + q_i (max y - min y) / s.

H D / sqrt(b) is orthogonal, so E[x'] = x (unbiased) and E ||x' - x||^2 = E ||y' - y||^2
<= b (max y - min y)^2 / (4 s^2). Rotation spreads the vector's energy so that with high
probability (max y - min y)^2 = O(log b / b) ||x||^2: E ||x' - x||^2 = O(log b / s^2) ||x||^2
(Theorem 3 of the paper: (2 ln b + 2) / s^2 ||x||^2 in expectation over the rotation), against
O(b / s^2) ||x||^2 without the rotation.

One D is drawn per call and used for every bucket: each bucket is still rotated by a uniformly
random D, and the error bound, an expectation summed over buckets, needs no independence
between buckets. The rotation seed is drawn per call from (seed, call) and sent in the
payload (8 bytes), so
any rank can undo any other rank's rotation; the stochastic rounding uses an independent
stream. Hadamard products use H_b = H_p (x) H_q (Kronecker, b = p q): two small matrix
products per bucket.

Wire: seed (int64), per bucket min and max (fp32), then the levels:
``coding="huffman"`` (default; the paper's variable-length code): a canonical Huffman code of
the levels' counts in this message: code lengths (s + 1 bytes), the block offsets (int32 per
block of 256 to 2048 levels, :func:`commlab.compress.coding.huffman_block`) and the code bits;
``coding="packed"``: ceil(log2(s + 1)) bits per level. Aggregation "gather".
The Huffman code's size depends on the levels drawn: :meth:`Rotated.payload_bytes` takes
``code_bits`` (the code's total bits), by default the mean length of the Huffman code of the
levels expected for Gaussian rotated coordinates (in a bucket's range of about +-sqrt(2 ln b)
standard deviations, :func:`commlab.compress.qsgd.rounded_levels`) times the levels.

Cost on a GPU (``cost``): the rotation is two Hadamard products per bucket (128 d flops for
b = 1024, 4 passes) between sign flips, the Hadamard matrices are rebuilt each call (about 40
tiny launches); then the range per bucket, the draw, floor and clamp; packed: 33 passes, 88
launches, 2 syncs to encode, 23 passes, 70 launches, 1 sync to decode. Huffman coding runs on the host by design: the
levels go there and back (syncs), costing about 100 passes of the host's memory to encode and
250 to decode (``host``, measured against a numpy copy).
"""
from __future__ import annotations

import math

import torch

from . import coding
from . import cost as costs
from .base import Compressor, Payload, check_int, check_levels, header_bytes, restore, work
from .cost import CHECK, Cost, KernelWork, tiny
from .qsgd import rounded_levels

CODINGS = ("huffman", "packed")


def hadamard(n: int, dtype=torch.float32, device="cpu") -> torch.Tensor:
    """The n x n Sylvester Walsh-Hadamard matrix (entries +-1), n a power of two."""
    h = torch.ones(1, 1, dtype=dtype, device=device)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h


def fwht(v: torch.Tensor) -> torch.Tensor:
    """H v for each row of v (rows of length b = 2^m), via H_b = H_p (x) H_q."""
    rows, b = v.shape
    m = b.bit_length() - 1
    p, q = 1 << (m // 2), 1 << (m - m // 2)
    hp, hq = hadamard(p, v.dtype, v.device), hadamard(q, v.dtype, v.device)
    return (hp @ v.view(rows, p, q) @ hq).reshape(rows, b)


class Rotated(Compressor):
    """``Rotated(levels=16, bucket=1024, coding="huffman", seed=0)``."""

    name = "rotated"
    unbiased = True
    aggregation = "gather"

    def __init__(self, levels: int = 16, bucket: int = 1024, coding: str = "huffman", seed: int = 0):
        super().__init__(seed)
        self.levels = check_levels(levels, self.name, 255)
        self.bucket = check_int(bucket, self.name, "bucket", 1, 1 << 24)
        if bucket & (bucket - 1):
            raise ValueError(f"{self.name}: bucket={bucket!r} is not a power of two; valid: 1, 2, 4, ..., 2^24")
        if coding not in CODINGS:
            raise ValueError(f"{self.name}: coding={coding!r} is not known; valid: {', '.join(CODINGS)}")
        self.coding = coding

    def _signs(self, seed: int, n: int, device, dtype) -> torch.Tensor:
        g = torch.Generator(device=device)
        g.manual_seed(seed)
        return torch.empty(n, dtype=dtype, device=device).bernoulli_(0.5, generator=g).mul_(2).sub_(1)

    def error_bound(self, t: torch.Tensor) -> float:
        """(2 ln b + 2) / s^2 ||x||^2: the paper's bound on E ||x' - x||^2."""
        b = min(self.bucket, 1 << max(0, (t.numel() - 1).bit_length()))
        return (2 * math.log(b) + 2) / self.levels ** 2 * float(work(t).double().pow(2).sum())

    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """Rotate each bucket (random signs, then Walsh-Hadamard), round to s levels at random;
        send the seed, each bucket's (min, max) and the levels, packed or Huffman-coded."""
        self.check(t)
        x = work(t)
        d, b, s = x.numel(), self.bucket, self.levels
        nb = -(-d // b)
        rseed = int(torch.randint(0, 2 ** 62, (1,), generator=self.generator("cpu", stream=1)))
        v = torch.cat([x, x.new_zeros(nb * b - d)]) if nb * b != d else x.clone()
        v = v.view(nb, b).mul_(self._signs(rseed, b, x.device, x.dtype))
        y = fwht(v).mul_(1 / math.sqrt(b))
        lo, hi = y.min(1).values, y.max(1).values
        width = hi - lo
        scale = torch.where(width > 0, s / width, torch.zeros_like(width))
        r = (y - lo[:, None]).mul_(scale[:, None]).reshape(-1)
        r.add_(torch.rand(r.numel(), generator=self.generator(x.device), device=x.device, dtype=x.dtype))
        q = r.floor_().clamp_(0, s).to(torch.uint8)
        self.tick()
        parts = {"seed": torch.full((1,), rseed, dtype=torch.int64, device=t.device),  # filled, not copied
                 "range": torch.stack([lo, hi], 1).float()}
        if self.coding == "packed":
            parts["levels"] = coding.pack_bits(q, coding.bits_for(s))
        else:
            lengths = coding.huffman_lengths(torch.bincount(q, minlength=s + 1).tolist())
            data, starts, _ = coding.huffman_encode(q, lengths)
            parts.update(lengths=torch.tensor(lengths, dtype=torch.uint8, device=t.device),
                         starts=starts.to(t.device), code=data.to(t.device))
        return Payload(parts, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """Levels back to values in each bucket's range, then the inverse rotation."""
        d, b, s = p.numel, self.bucket, self.levels
        nb = -(-d // b)
        if "levels" in p.parts:
            q = coding.unpack_bits(p["levels"], coding.bits_for(s), nb * b)
        else:
            q = coding.huffman_decode(p["code"], p["starts"], p["lengths"].tolist(), nb * b)
        dtype = torch.float64 if p.dtype == torch.float64 else torch.float32
        rng = p["range"].reshape(nb, 2).to(dtype)
        lo, width = rng[:, :1], (rng[:, 1:] - rng[:, :1]) / s
        y = q.to(rng.device).to(dtype).view(nb, b).mul_(width).add_(lo)
        v = fwht(y).mul_(1 / math.sqrt(b))
        v.mul_(self._signs(int(p["seed"][0]), b, v.device, dtype))
        return restore(v.reshape(-1)[:d], p)

    def payload_bytes(self, shape, dtype=torch.float32, *, code_bits: int | None = None) -> int:
        """Seed, ranges and the levels: packed (exact), or Huffman-coded in ``code_bits`` bits (by
        default the expected length for Gaussian rotated coordinates, rounded to whole bits)."""
        d, b, s = math.prod(shape), self.bucket, self.levels
        n = -(-d // b) * b  # levels, padding included
        head = 8 + 8 * (n // b)  # seed; min and max per bucket
        if self.coding == "packed":
            return header_bytes(len(shape), ["seed", "range", "levels"]) + head + -(-n * coding.bits_for(s) // 8)
        if code_bits is None:
            code_bits = round(n * self.huffman_bits(min(b, max(d, 1))))
        starts = 4 * -(-n // coding.huffman_block(n))  # int32 bit offset per block
        return header_bytes(len(shape), ["seed", "range", "lengths", "starts", "code"]) + head + s + 1 + starts + \
            -(-code_bits // 8)

    def huffman_bits(self, b: int) -> float:
        """Mean bits per level of the Huffman code of the levels expected in a bucket of b Gaussian
        rotated coordinates (range: the expected extremes, about +-sqrt(2 ln b))."""
        a = math.sqrt(2 * math.log(b)) - (math.log(math.log(b)) + math.log(4 * math.pi)) / (
            2 * math.sqrt(2 * math.log(b))) if b > 2 else 1.0  # expected max of b standard normals
        p = rounded_levels(self.levels, self.levels / (2 * a), self.levels / 2)
        counts = [round(q * 2 ** 20) for q in p]
        return sum(c * l for c, l in zip(counts, coding.huffman_lengths(counts))) / sum(counts)

    def cost(self, shape) -> Cost:
        """Random signs, two Hadamard products per bucket, the range, a draw, floor, clamp, the
        levels packed (or Huffman-coded on the host); decode backwards."""
        d, b, s = max(math.prod(shape), 1), self.bucket, self.levels
        n = -(-d // b) * b
        f = n / d  # padding included
        m = b.bit_length() - 1
        p, q = 1 << (m // 2), 1 << (m - m // 2)
        hadamards = tiny(2 + 4 * (m // 2) + 4 * (m - m // 2))  # H_p, H_q rebuilt: ones, then 4 per doubling
        signs = tiny(4)  # b random signs: empty, bernoulli_, * 2, - 1
        rotate = (hadamards + KernelWork(f * 2, 1, flops=2 * n * p) + KernelWork(f * 2, 1, flops=2 * n * q)  # H_p V, then V H_q
                  + KernelWork(f * 2, 1))  # / sqrt(b)
        encode = (CHECK + tiny(2) + KernelWork(syncs=1)  # the rotation's seed, drawn on the host
                  + (KernelWork(2 * f, 2) if n != d else KernelWork(2, 1))  # the padded copy
                  + signs + KernelWork(f * 2, 1) + rotate  # signs, H D x / sqrt(b)
                  + KernelWork(f, 1).repeat(2) + tiny(6)  # min, max per bucket; s / width where width > 0
                  + KernelWork(f * 2, 1) + KernelWork(f * 2, 1)  # (y - min), times s / width
                  + KernelWork(f, 1) + KernelWork(f * 3, 1)  # + uniform
                  + KernelWork(f * 2, 1).repeat(2) + KernelWork(f * 1.25, 1)  # floor, clamp, to uint8
                  + tiny(2))  # the seed's fill, the ranges stacked
        back = (tiny(2) + KernelWork(f * 2, 1).repeat(2)  # range / s; levels * width, + min
                + rotate + KernelWork(syncs=1) + signs + KernelWork(f * 2, 1))  # H y' / sqrt(b); the seed read, the signs
        if self.coding == "packed":
            bits = coding.bits_for(s)
            return Cost(encode + costs.pack_codes(bits, n, d),
                        costs.unpack_codes(bits, n, d) + KernelWork(f * 2, 1) + back)  # int32 levels to fp32
        encode += (KernelWork(f * 0.25, 1) + KernelWork(syncs=1)  # bincount of the levels, to the host (tolist)
                   + KernelWork(f * 0.25, 1, syncs=4, host=100))  # the levels to numpy's Huffman coder, 3 parts back
        decode = (KernelWork(f * 2, 1, syncs=3, host=250)  # lengths and the code to the host; int64 levels back
                  + KernelWork(f * 3, 1) + back)  # int64 levels to fp32
        return Cost(encode, decode)
