"""Reference solutions of chapter 07: sparsification and low rank."""
from __future__ import annotations

VARIABLES = {"check_topk_bytes": "answer", "check_contraction": "answer", "check_topk": "my_topk"}


def topk_bytes():
    """Exercise 1: bytes of the top-k payload (ratio 0.001, D = 10^6 fp32): header + k (index + value)."""
    from commlab.compress.base import header_bytes

    D, ratio = 1_000_000, 0.001
    k = round(ratio * D)
    index = 4 if D > 65536 else 2                   # int32 indices above 65,536 coordinates
    return header_bytes(1, ["idx", "val"]) + k * (index + 4)


def contraction():
    """Exercise 2: 1 - k/D for D = 10 at ratio 0.01, with k = round(ratio D) but at least 1."""
    D, ratio = 10, 0.01
    k = max(1, round(ratio * D))
    return 1 - k / D


def topk():
    """Exercise 3: ``my_topk(x, k)``, x's k largest-magnitude entries, zeros elsewhere."""
    import torch

    def my_topk(x, k):
        flat = x.reshape(-1)
        keep = torch.topk(flat.abs(), k).indices
        out = torch.zeros_like(flat)
        out[keep] = flat[keep]
        return out.reshape(x.shape)
    return my_topk
