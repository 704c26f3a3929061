"""Exercises of chapter 07: sparsification and low rank."""
from __future__ import annotations

import torch

from ...compress.sparse import sparse_nbytes
from ...compress.topk import count
from . import check_function, check_number

# the settings the exercises name
TOPK_BYTES = dict(d=1_000_000, ratio=0.001)  # exercise 1: a flat fp32 gradient (int32 indices)
CONTRACTION = dict(d=10, ratio=0.01)         # exercise 2: a bias of 10 values


def topk_bytes(d: int, ratio: float) -> int:
    """Exact wire size of the top-k payload of a 1-D fp32 tensor of d values (the library's
    Payload: header + k (index + value bytes))."""
    return sparse_nbytes((d,), count(ratio, d), torch.float32)


def check_topk_bytes(answer) -> bool:
    """Exercise 1: bytes of the top-k payload (ratio 0.001) of a 1-D fp32 gradient of
    d = 1,000,000 values, header included."""
    want = topk_bytes(**TOPK_BYTES)
    return check_number("top-k payload bytes", answer, want, rel=0.0,
                        hint="k = round(ratio d); d > 65536 means int32 indices; the header of a 1-D payload "
                             "with parts 'idx' and 'val' is 4 + 4 + (6 + 3) + (6 + 3) bytes.")


def check_contraction(answer) -> bool:
    """Exercise 2: the contraction factor 1 - k/D that the top-k bound guarantees for a
    tensor of D = 10 values at ratio 0.01."""
    c = CONTRACTION
    want = 1 - count(c["ratio"], c["d"]) / c["d"]
    return check_number("top-k contraction factor for d = 10", answer, want, rel=1e-6,
                        hint="How many coordinates does the library keep when ratio * d rounds to 0?")


def _trial_inputs():
    g = torch.Generator().manual_seed(7)
    cases = []
    for shape, k in (((100,), 10), ((1000,), 1), ((37,), 37), ((50,), 0), ((8, 16), 20)):
        cases.append((torch.randn(shape, generator=g), k))
    for shape, k in (((200,), 30), ((64,), 5), ((12, 10), 17)):  # small integers: many ties in |x|
        x = torch.randint(1, 6, shape, generator=g).float()
        x *= torch.where(torch.rand(shape, generator=g) < 0.5, -1.0, 1.0)
        cases.append((x, k))
    return cases


def _trial(fn):
    for x, k in _trial_inputs():
        where = f"for x of shape {tuple(x.shape)} and k = {k}"
        y = fn(x.clone(), k)
        assert isinstance(y, torch.Tensor), f"{where} it returned {type(y).__name__}, not a tensor"
        assert y.shape == x.shape, f"{where} it returned shape {tuple(y.shape)}; keep x's shape"
        kept = y != 0
        assert int(kept.sum()) == k, f"{where} it kept {int(kept.sum())} entries, not k = {k}"
        assert torch.equal(y[kept], x[kept]), f"{where} a kept entry differs from x there"
        want = torch.topk(x.abs().reshape(-1), k).values.sort().values
        got = y[kept].abs().sort().values
        assert torch.equal(got, want), (f"{where} the kept magnitudes are not the k largest |x_i| "
                                        "(compare magnitudes, not signed values)")


def check_topk(fn) -> bool:
    """Exercise 3: ``fn(x, k)`` returns a tensor of x's shape that keeps the k entries of x of
    largest magnitude and is zero elsewhere. Tried on vectors and matrices, k = 0 and k = d,
    and integer inputs with many ties in |x| (any choice among tied entries is right),
    against ``torch.topk``."""
    return check_function("top-k", fn, _trial)
