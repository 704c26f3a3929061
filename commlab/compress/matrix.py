"""How the low-rank compressors (PowerSGD, ATOMO) see a tensor as a matrix.

Rule, for a tensor of shape ``shape`` with d elements:

* two or more dimensions: the matrix ``(shape[0], d / shape[0])``, as in the PowerSGD paper
  (a convolution's kernel (out, in, h, w) becomes out x (in h w));
* one dimension (or a scalar) with d < ``min_vector`` (65536 by default): no matrix, the
  tensor is sent uncompressed, as the papers do for biases and normalization weights;
* one dimension with d >= ``min_vector`` (a flat buffer of a whole model, the benchmark's
  25M vector): a near-square matrix, m = ceil(sqrt d) rows (at most ``max_rows``) and
  n = ceil(d / m) columns, the last m n - d entries zero padding (fewer than m; they are
  never sent, only the factors are).

A compressor of rank r sends a matrix only if that saves bytes, r (m + n) < m n; otherwise
it sends it uncompressed (:func:`worth_it`). :class:`LowRank` holds what the two share: the
plan, the wire form of two factors, decompression, exact sizes, and the cost of decoding
(one matrix product, 2 r a b flops, writing the matrix: 1 pass).

``layout="tensorflow"`` views a tensor as TensorFlow stores it, to compare with GRACE (Xu et al.,
"GRACE: A Compressed Communication Framework for Distributed Machine Learning", ICDCS 2021;
sands-lab/grace), whose TensorFlow PowerSGD reshapes each gradient to (shape[0], -1) of TF's
layout: a conv kernel is [kh, kw, cin, cout] there, a dense kernel [in, out]. A tensor here of
PyTorch's shape (cout, cin, *k) is first permuted to (*k, cin, cout) (dims 2.., then 1, then 0;
a 2-D one is transposed), then the rule above applies: m = kh rows for a convolution (a 1x1
conv is one row: it goes raw), m = in for a Linear, n = d / m; 1-D tensors as
before. The matrix is a new tensor anyway, so the permutation is that copy (2 passes, 1 launch,
as for the default layout); decoding permutes back in one more copy (2 passes, 1 launch).
Bytes: r (m + n) values of the new m and n, or d raw where r (m + n) >= m n. There GRACE sends
its factors all the same, r (m + n) values with r = min(rank, m, n): for the 1 x n matrix of a
1x1 convolution d + 1 values, one value more than the raw tensor here.
"""
from __future__ import annotations

import math

import torch

from .. import checks
from .base import Compressor, Payload, check_rank, header_bytes
from .cost import CHECK, KernelWork

MIN_VECTOR = 1 << 16
LAYOUTS = ("pytorch", "tensorflow")  # how a tensor of >= 2 dimensions is laid out before its matrix view


def matrix_shape(shape, min_vector: int = MIN_VECTOR, max_rows: int | None = None):
    """(m, n) of the matrix view of a tensor of ``shape``, or None: send it uncompressed."""
    shape = tuple(shape)
    d = math.prod(shape)
    if d == 0:
        return None
    if len(shape) >= 2:
        return shape[0], d // shape[0]
    if d < min_vector:
        return None
    m = math.isqrt(d - 1) + 1  # ceil(sqrt(d))
    m = min(m, max_rows) if max_rows else m
    return m, -(-d // m)


def tf_order(ndim: int) -> tuple:
    """The permutation from PyTorch's layout (out, in, *k) to TensorFlow's (*k, in, out)."""
    return (*range(2, ndim), 1, 0)


def worth_it(m: int, n: int, r: int) -> bool:
    """Do r factors of m + n numbers take fewer bytes than the m n entries?"""
    return r * (m + n) < m * n


def to_matrix(t: torch.Tensor, mn, dtype=None) -> torch.Tensor:
    """The (m, n) matrix of tensor t (zero-padded at the end), as a new tensor of ``dtype``."""
    m, n = mn
    flat = t.detach().reshape(-1).to(dtype or t.dtype)
    if flat.numel() == m * n:
        return flat.clone().view(m, n) if flat.data_ptr() == t.data_ptr() else flat.view(m, n)
    out = torch.zeros(m * n, dtype=flat.dtype, device=flat.device)
    out[:flat.numel()] = flat
    return out.view(m, n)


def from_matrix(M: torch.Tensor, shape, dtype) -> torch.Tensor:
    """The tensor of ``shape`` and ``dtype`` whose matrix view is M (padding dropped)."""
    d = math.prod(shape)
    return M.reshape(-1)[:d].to(dtype).reshape(shape)


class LowRank(Compressor):
    """What PowerSGD and ATOMO share: a tensor travels as two factors, L (r x a) and R (r x b),
    with matrix L^T R (transposed back when the view was transposed so that a <= b), or raw.
    Subclasses name the factors (``factors``), say whether to transpose tall matrices
    (``transpose``) and may cap the rows of a 1-D view (``max_rows``). ``layout`` "tensorflow"
    views a tensor of 2 or more dimensions in TensorFlow's layout (see the module)."""

    factors = ("l", "r")
    transpose = False
    max_rows = None
    # each weight is one matrix: a fused buffer of a small model has no matrix view and would go raw
    whole_tensors = True

    def __init__(self, rank: int, min_vector: int = MIN_VECTOR, seed: int = 0, layout: str = "pytorch"):
        super().__init__(seed)
        self.rank = check_rank(rank, self.name)
        self.min_vector = min_vector
        self.layout = checks.choice("layout", layout, LAYOUTS, where=self.name)

    def permuted(self, shape) -> bool:
        """Is a tensor of ``shape`` permuted into TensorFlow's layout before its matrix view?"""
        return self.layout == "tensorflow" and len(shape) >= 2

    def view_shape(self, shape) -> tuple:
        """The shape whose matrix view is taken: ``shape``, or its TensorFlow layout."""
        shape = tuple(shape)
        return tuple(shape[i] for i in tf_order(len(shape))) if self.permuted(shape) else shape

    def plan(self, shape):
        """(a, b, r, transposed): the factors of a tensor of ``shape`` are r x a and r x b; or
        None: it goes raw (no matrix view, or r (a + b) >= a b)."""
        mn = matrix_shape(self.view_shape(shape), self.min_vector, self.max_rows)
        if mn is None or not worth_it(*mn, min(self.rank, *mn)):
            return None
        m, n = mn
        r = min(self.rank, m, n)
        return (n, m, r, True) if self.transpose and m > n else (m, n, r, False)

    def matrix(self, t: torch.Tensor, plan, dtype) -> torch.Tensor:
        """The a x b matrix of t in ``dtype`` (a new tensor, or a transposed view of one)."""
        a, b, _, transposed = plan
        mn = (b, a) if transposed else (a, b)
        if self.permuted(t.shape):  # one copy, permuted: the new tensor the matrix needs anyway
            M = torch.empty(self.view_shape(t.shape), dtype=dtype, device=t.device)
            M = M.copy_(t.detach().permute(tf_order(t.dim()))).view(mn)
        else:
            M = to_matrix(t, mn, dtype)
        return M.T if transposed else M

    def tensor(self, M: torch.Tensor, shape, dtype) -> torch.Tensor:
        """The inverse of :meth:`matrix`: the tensor of ``shape`` and ``dtype`` whose a x b matrix is M."""
        M = M.T if self.plan(shape)[3] else M
        if not self.permuted(shape):
            return from_matrix(M, shape, dtype)
        order = tf_order(len(shape))
        back = tuple(order.index(i) for i in range(len(shape)))
        return torch.empty(shape, dtype=dtype, device=M.device).copy_(M.reshape(self.view_shape(shape)).permute(back))

    def raw(self, t: torch.Tensor) -> Payload:
        """The tensor uncompressed, as one part ``raw`` (for tensors the rule sends whole)."""
        return Payload({"raw": t.detach()}, t.shape, t.dtype)

    def pack(self, t: torch.Tensor, left: torch.Tensor, right: torch.Tensor) -> Payload:
        """The payload of factors L (r x a) and R (r x b) of tensor t, in t's dtype."""
        return Payload({self.factors[0]: left.to(t.dtype), self.factors[1]: right.to(t.dtype)}, t.shape, t.dtype)

    def decompress(self, p: Payload) -> torch.Tensor:
        """L^T R from the two factors, back in the tensor's shape and dtype (or the raw tensor)."""
        if "raw" in p.parts:
            return p["raw"].reshape(p.shape).to(p.dtype)
        plan = self.plan(p.shape)
        if plan is None or set(p.parts) != set(self.factors):
            raise ValueError(f"{self.name}: payload parts {sorted(p.parts)} do not fit shape {p.shape}")
        a, b = plan[:2]
        left, right = (p[k] for k in self.factors)
        r = left.numel() // a
        wide = torch.promote_types(p.dtype, torch.float32)
        return self.tensor(torch.mm(left.to(wide).view(r, a).T, right.to(wide).view(r, b)), p.shape, p.dtype)

    def payload_bytes(self, shape, dtype=torch.float32, *, r: int | None = None) -> int:
        """Exact payload size for a tensor of ``shape``: factors of rank ``r`` (default: the
        rank the plan uses), or the raw tensor."""
        plan = self.plan(shape)
        if plan is None:
            return header_bytes(len(shape), ["raw"]) + math.prod(shape) * dtype.itemsize
        r = plan[2] if r is None else r
        return header_bytes(len(shape), self.factors) + r * (plan[0] + plan[1]) * dtype.itemsize

    def matrix_work(self, shape) -> KernelWork:
        """:meth:`matrix` of an fp32 tensor: the check, and a copy (permuted in TensorFlow's layout;
        zero-padded for a 1-D view)."""
        a, b = self.plan(shape)[:2]
        d = max(math.prod(shape), 1)
        return CHECK + (KernelWork(2, 1) if a * b == d else KernelWork(a * b / d, 1) + KernelWork(2, 1))  # clone; or zeros, copy

    def product_work(self, shape, r: int) -> KernelWork:
        """L^T R, a x b from rank r factors (2 r a b flops, the matrix written), back in the tensor's
        shape (a copy when the view was transposed, one more when it was permuted)."""
        a, b, _, transposed = self.plan(shape)
        f = a * b / max(math.prod(shape), 1)
        return (KernelWork(f + r * (a + b) / (a * b) * f, 1, flops=2 * r * a * b)
                + (KernelWork(2 * f, 1) if transposed else KernelWork())
                + (KernelWork(2, 1) if self.permuted(shape) else KernelWork()))
