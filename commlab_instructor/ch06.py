"""Reference solutions of chapter 06: quantization."""
from __future__ import annotations

VARIABLES = {"check_qsgd_bytes": "answer", "check_qsgd_bound": "answer", "check_qsgd_safe_levels": "answer",
             "check_unbiased": "my_quantizer"}


def qsgd_bytes():
    """Exercise 1: packed QSGD's payload bytes (s = 16, U = 512, D = 10^6): header, norms, codes."""
    import math
    from commlab.compress.base import header_bytes

    D, s, U = 1_000_000, 16, 512
    bits = 1 + math.ceil(math.log2(s + 1))      # a sign and the level
    header = header_bytes(1, ["norms", "codes"])
    norms = 4 * math.ceil(D / U)                # one fp32 norm per bucket
    codes = math.ceil(D * bits / 8)             # packed into whole bytes
    return header + norms + codes


def qsgd_bound():
    """Exercise 2: theta = min(d / s^2, sqrt(d) / s) for one bucket of d = 10,000 and s = 50."""
    import math

    d, s = 10_000, 50
    return min(d / s ** 2, math.sqrt(d) / s)


def qsgd_safe_levels():
    """Exercise 2, second part: the smallest s with min(d / s^2, sqrt(d) / s) < 1, d = 10,000."""
    import math

    d, s = 10_000, 1
    while min(d / s ** 2, math.sqrt(d) / s) >= 1:   # sqrt(d)/s is the smaller branch while s < sqrt(d)
        s += 1
    return s


def unbiased():
    """Exercise 3: ``my_quantizer(x, generator)``, x rounded at random to min(x) or max(x), unbiased."""
    import torch

    def my_quantizer(x, generator):
        lo, hi = x.min(), x.max()
        if hi == lo:                     # one value: nothing to round
            return x.clone()
        p = (x - lo) / (hi - lo)         # P(hi) such that E = p hi + (1 - p) lo = x
        up = torch.rand(x.shape, generator=generator) < p
        return torch.where(up, hi, lo)
    return my_quantizer
