"""PowerSGD (Vogels, Karimireddy and Jaggi 2019, "PowerSGD: Practical Low-Rank Gradient
Compression for Distributed Optimization").

Each gradient tensor is viewed as a matrix M (m x n; :mod:`commlab.compress.matrix` has the
rule: 1-D tensors below 65536 elements, and matrices where rank r would not save bytes, go
uncompressed). One step of rank r on N workers, with error feedback e and a warm-started
Q (n x r, the same on every worker; drawn from a shared seed the first time):

    M_i  <- g_i + e_i                    error feedback
    P    =  (1/N) sum_i M_i Q            all-reduce #1 (m r numbers, plus the uncompressed tensors)
    P^   =  orthonormal basis of P       (reduced QR; Gram-Schmidt in the paper, same span)
    Q_i  =  M_i^T P^                     local
    Q    <- (1/N) sum_i Q_i              all-reduce #2 (n r numbers); kept for the next step
    out  =  P^ Q^T  = (1/N) sum_i P^ Q_i^T   what every worker applies
    e_i  <- M_i - P^ Q_i^T               the paper's error feedback: the local approximation

Both factors are linear in M_i once Q (then P^) is shared, so they are added in compressed
form: aggregation "sum", two all-reduces per step for all tensors together (:meth:`PowerSGD.aggregate`,
which receives the all-reduce as an argument: :func:`commlab.arch.aggregate.aggregate_all` hands it
any algorithm of :mod:`commlab.arch.collectives`).

One power-iteration step per SGD step, warm-started from the previous Q, tracks the top-r
subspace of a slowly changing gradient; for a matrix of rank <= r the result is exact.
Error bound: P^ P^^T M is the projection of M on span(P^), so
||M - P^ Q_i^T||_F <= ||M||_F, and it approaches the best rank-r error
(sum_{j>r} sigma_j^2)^(1/2) as the warm-started iterations converge. Biased: use its own
error feedback (on by default), not ``+ef``.

Wire per compressed tensor: r (m + n) values in the tensor's dtype; as a standalone payload
(``compress``) the parts "p" (P^ transposed, r x m) and "q" (Q transposed, r x n),
``header + r (m + n) value bytes``;
an uncompressed tensor is one part "raw". Arithmetic runs in fp32 (fp64 stays fp64).

Declared: ``wire`` is the two all-reduces, P (m r values) then Q (n r values), or one of the
raw tensor; ``cost`` on a GPU: M = g + e copied (5 passes), the three products M Q, M^T P and
the error M - P Q^T (4 passes, 6 r m n flops) and the QR of P; decode one product (1 pass,
2 r m n flops).

``layout="tensorflow"`` (``powersgd(rank=1, layout='tensorflow')``) views each tensor as GRACE's
TensorFlow PowerSGD does (Xu et al., ICDCS 2021; sands-lab/grace): reshaped to (shape[0], -1) of
TensorFlow's layout, [kh, kw, cin, cout] for a convolution, [in, out] for a Linear, so m = kh
(or in) and n = d / m (:mod:`commlab.compress.matrix`). A 3x3 convolution of rank r then sends
r (3 + d / 3) values instead of r (cout + d / cout): a third of the tensor at rank 1; a 1x1
convolution (m = 1) goes raw, d values, where GRACE sends d + 1. The tensor is permuted into
that layout in the copy that makes M (no extra cost) and back in decode (one more copy, 2 passes).
"""
from __future__ import annotations

import functools
import math

import torch

from .base import Payload
from .cost import CHECK, Cost, KernelWork
from .matrix import MIN_VECTOR, LowRank


def orthonormalize(P: torch.Tensor) -> torch.Tensor:
    """An orthonormal basis (m x r) of the columns of P, by reduced QR."""
    return torch.linalg.qr(P, mode="reduced").Q


class PowerSGD(LowRank):
    """``PowerSGD(rank=2)``: rank-r power-iteration compression with error feedback and warm
    start, state per key. Every rank needs the same ``seed`` (the first Q). ``layout``
    "tensorflow" takes the matrix view of TensorFlow's layout, as GRACE's PowerSGD does."""

    name = "powersgd"
    whole_tensors = True  # each weight is one matrix M = P Q^T
    no_error_feedback = "has its error feedback built in (it keeps its own residual)"
    unbiased = False
    aggregation = "sum"
    factors = ("p", "q")  # P^ and Q, sent transposed: r x m and r x n

    def __init__(self, rank: int = 2, error_feedback: bool = True, warm_start: bool = True,
                 min_vector: int = MIN_VECTOR, seed: int = 0, layout: str = "pytorch"):
        super().__init__(rank, min_vector, seed, layout)
        self.error_feedback = bool(error_feedback)
        self.warm_start = bool(warm_start)
        self.state: dict = {}  # key -> {"q": Q, "e": error}

    # -- the pieces of one step
    def _start(self, t: torch.Tensor, key):
        """M = g + e (as a wide matrix) and the Q to multiply it with; None if uncompressed."""
        plan = self.plan(t.shape)
        if plan is None:
            return None
        _, n, r, _ = plan
        wide = torch.promote_types(t.dtype, torch.float32)
        st = self.state.setdefault(key, {})
        M = self.matrix(t, plan, wide)
        e = st.get("e")
        if self.error_feedback and e is not None and e.shape == M.shape:
            M += e
        q = st.get("q")
        if q is None or q.shape != (n, r) or not self.warm_start:
            g = torch.Generator(device=t.device).manual_seed(self.seed)
            q = torch.randn(n, r, generator=g, device=t.device, dtype=wide)
        return M, q

    def _finish(self, key, M, p_hat, q_local, q_mean):
        st = self.state[key]
        st["q"] = q_mean
        if self.error_feedback:
            st["e"] = torch.addmm(M, p_hat, q_local.T, alpha=-1)

    # -- one tensor on its own (N = 1, or the payload a parameter server would get)
    def compress(self, t: torch.Tensor, key=None) -> Payload:
        """One rank's view: P = orth(M Q), Q = M^T P; the factors travel (or the raw tensor)."""
        self.check(t)
        job = self._start(t, key)
        if job is None:
            return self.raw(t)
        M, q = job
        p_hat = orthonormalize(M @ q)
        q_local = (p_hat.T @ M).T  # M^T P^, but reading M row by row (6x faster than M.T @ P^)
        self._finish(key, M, p_hat, q_local, q_local)
        return self.pack(t, p_hat.T, q_local.T)

    # -- aggregation: two rounds, not one summable tensor
    protocol = "powersgd"  # commlab.arch.aggregate hands aggregate() its all-reduce

    def summable(self, t, key=None):
        """Always TypeError: PowerSGD aggregates in two all-reduces (see :meth:`aggregate`)."""
        raise TypeError(f"{self.name} aggregates in two all-reduces (P, then Q); use "
                        f"commlab.arch.aggregate.aggregate_all(comm, compressor, tensors)")

    def aggregate(self, tensors, keys, sum_over_ranks, world_size: int) -> list:
        """One PowerSGD step for a list of tensors (one key each): every rank calls it with its
        gradients and ``sum_over_ranks(buf)``, which sums a flat buffer over the ``world_size``
        ranks in place (an all-reduce); all get the list of averaged approximations. Two
        all-reduces in all: P factors with the uncompressed tensors, then Q factors."""
        tensors = [self.check(t) for t in tensors]
        keys = list(keys)
        if len(keys) != len(tensors):
            raise ValueError(f"{self.name}: {len(tensors)} tensors but {len(keys)} keys")
        wire = functools.reduce(torch.promote_types, [t.dtype for t in tensors], tensors[0].dtype) if tensors else None
        mean = functools.partial(_mean_over_ranks, sum_over_ranks=sum_over_ranks, world_size=world_size, wire=wire)
        jobs = [self._start(t, k) for t, k in zip(tensors, keys)]
        low = [i for i, j in enumerate(jobs) if j is not None]
        raw = [i for i, j in enumerate(jobs) if j is None]
        first = mean([jobs[i][0] @ jobs[i][1] for i in low] + [tensors[i].detach() for i in raw])
        out = [None] * len(tensors)
        for i, m in zip(raw, first[len(low):]):
            out[i] = m
        p_hats = [orthonormalize(p) for p in first[:len(low)]]
        q_locals = [(p_hat.T @ jobs[i][0]).T for i, p_hat in zip(low, p_hats)]
        q_means = mean(q_locals)
        for i, p_hat, q_local, q_mean in zip(low, p_hats, q_locals, q_means):
            self._finish(keys[i], jobs[i][0], p_hat, q_local, q_mean)
            out[i] = self.tensor(torch.mm(p_hat, q_mean.T), tensors[i].shape, tensors[i].dtype)
        return out

    def wire(self, shape, dtype=torch.float32) -> tuple:
        """Two all-reduces, of P (m x r) and of Q (n x r); a tensor sent raw goes in the first, alone."""
        plan = self.plan(shape)
        if plan is None:
            return (("allreduce", math.prod(shape) * dtype.itemsize),)
        a, b, r, _ = plan
        return (("allreduce", a * r * dtype.itemsize), ("allreduce", b * r * dtype.itemsize))

    def cost(self, shape) -> Cost:
        """M = g + e; P = M Q, its QR; Q = M^T P; the error M - P Q^T; the means of P and Q.
        Decode: P Q^T. A raw tensor: copied into the first all-reduce's buffer, then / N."""
        plan = self.plan(shape)
        d = max(math.prod(shape), 1)
        if plan is None:
            return Cost(CHECK + KernelWork(2, 1), KernelWork(2, 1))
        a, b, r, _ = plan
        f, mn = a * b / d, 2 * r * a * b  # the matrix in passes over d; flops of a product
        encode = (self.matrix_work(shape)
                  + (KernelWork(3 * f, 1) if self.error_feedback else KernelWork())  # M += e
                  + KernelWork(f, 1, flops=mn) + KernelWork(0, 2, flops=4 * a * r * r)  # P = M Q; its QR
                  + KernelWork(4 * a * r / d, 2)  # P into the all-reduce's buffer, / N
                  + KernelWork(f, 1, flops=mn) + KernelWork(4 * b * r / d, 2)  # Q = M^T P; the same for Q
                  + (KernelWork(2 * f, 1, flops=mn) if self.error_feedback else KernelWork()))  # e = M - P Q^T
        return Cost(encode, self.product_work(shape, r))

    def reset(self) -> None:
        """Forget every error-feedback buffer and warm-started Q."""
        self.state.clear()

    def __repr__(self) -> str:
        return f"powersgd(rank={self.rank}{'' if self.layout == 'pytorch' else f', layout={self.layout!r}'})"


def _mean_over_ranks(parts, sum_over_ranks, world_size: int, wire):
    """Sum the list of tensors over all ranks in one flat buffer of dtype ``wire``; return the
    means, each shaped and typed like its input."""
    if not parts:
        return []
    buf = torch.cat([p.reshape(-1).to(wire) for p in parts])
    sum_over_ranks(buf)
    out, at = [], 0
    for p in parts:
        out.append(buf[at:at + p.numel()].to(p.dtype).view(p.shape) / world_size)
        at += p.numel()
    return out
