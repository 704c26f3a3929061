"""Asynchronous consensus ADMM (Zhang and Kwok, "Asynchronous distributed ADMM for consensus
optimization", ICML 2014) on L2-regularized logistic regression: asynchrony beyond SGD.

The problem, over N workers that each hold a shard (A_i, b_i) of the n samples (b in {-1, 1}):

    min_{x_1..x_N, z}  sum_i f_i(x_i) + r(z)   s.t.  x_i = z,
    f_i(x) = (1/n) sum_{j in shard i} log(1 + exp(-b_j a_j^T x)),     r(z) = (lam/2) ||z||^2

so that sum_i f_i(z) + r(z) is the usual mean logistic loss plus the penalty. Worker i keeps
x_i and its dual lam_i; the master (one extra rank, rank N) keeps z. A worker that receives
z~ from the master computes

    x_i   <- argmin_x f_i(x) + lam_i^T (x - z~) + (rho/2) ||x - z~||^2   (a few Newton steps)
    lam_i <- lam_i + rho (x_i - z~)

and sends (x_i, lam_i). The master waits for a set A_k of workers (a *partial barrier*:
|A_k| >= S) such that every worker has been heard from within the last tau iterations
(*bounded delay*: i in A_{k-tau+1} u ... u A_k), keeps the latest (x_i, lam_i) of all
workers, and sets in closed form (the gradient of the z-subproblem is zero)

    z <- argmin_z r(z) + sum_i [lam_i^T (x_i - z) + (rho/2) ||x_i - z||^2]
       = sum_i (rho x_i + lam_i) / (lam + N rho),

then replies z to the workers of A_k only. S = N, tau = 1 is synchronous ADMM (Boyd et al.
2011, section 7.1); S < N lets the master go on without a straggler, whose stale update
(computed from a z at most tau iterations old) is still in the sum.

On the threads runtime the master takes messages with ``comm.recv_first`` (first in
*simulated* time), so that with a ``Network`` the run, its order and its clock are the same
on every run; without a network, ties go to the lowest rank. Worker compute is charged to
the clock by a FLOP count of the Newton steps, so ``Network(slowdown={r: 4.0})`` makes
rank r a straggler. On other runtimes messages are taken in real arrival order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .. import checks
from ..data import split_iid
from ..runtime import launch

UP, DOWN = 71, 72  # tags: worker -> master (x_i, lam_i), master -> worker (z, flag)
NEWTON_STEPS = 3  # warm-started Newton steps per local solve


@dataclass
class AdmmHistory:
    """Per master iteration k = 1..K: objective sum_i f_i(z) + r(z); primal residual
    sqrt(sum_i ||x_i - z||^2) over the latest x_i; the master's simulated time (0 without a
    network); the workers whose updates it took (A_k); and delay, the largest age k - s of a
    taken update computed from z^s (1 when synchronous, at most tau). z: the final z."""

    objective: list[float] = field(default_factory=list)
    residual: list[float] = field(default_factory=list)
    time: list[float] = field(default_factory=list)
    contributors: list[tuple[int, ...]] = field(default_factory=list)
    delay: list[int] = field(default_factory=list)
    z: torch.Tensor | None = None
    config: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.objective)

    @property
    def max_delay(self) -> int:
        """The largest age k - s of an update the master took, over all iterations (0 if none)."""
        return max(self.delay, default=0)

    def time_to(self, target: float) -> float:
        """Simulated time of the first iteration whose objective is <= target (inf if none)."""
        return next((t for t, f in zip(self.time, self.objective) if f <= target), float("inf"))

    def iterations_to(self, target: float) -> int | float:
        """First iteration (1-based) whose objective is <= target (inf if none)."""
        return next((k + 1 for k, f in enumerate(self.objective) if f <= target), float("inf"))


def logistic_objective(X: torch.Tensor, y: torch.Tensor, lam: float, w: torch.Tensor) -> float:
    """(1/n) sum_j log(1 + exp(-y_j x_j^T w)) + (lam/2) ||w||^2 (labels in {0, 1} or {-1, 1})."""
    X, y = _check_data(X, y)
    w = torch.as_tensor(w, dtype=torch.float64)
    return float(F.softplus(-y * (X @ w)).mean() + 0.5 * lam * w.dot(w))


def logistic_optimum(X, y, lam: float = 1e-2, tol: float = 1e-12, max_iter: int = 100) -> torch.Tensor:
    """The minimizer of :func:`logistic_objective` by damped Newton in float64 (the oracle)."""
    X, y = _check_data(X, y)
    zero = torch.zeros(X.shape[1], dtype=torch.float64)
    return _newton(X, y, len(X), zero, zero, lam, zero, max_iter, tol)[0]


def _newton(X, y, n, center, shift, rho, x, steps, tol=0.0):
    """Minimize (1/n) sum log(1 + exp(-y_j a_j^T x)) + shift^T x + (rho/2) ||x - center||^2 from x
    by Newton steps with Armijo backtracking; returns (x, function evaluations)."""
    def phi(v):
        return float(F.softplus(-y * (X @ v)).sum() / n + shift.dot(v) + 0.5 * rho * (v - center).dot(v - center))

    f, evals = phi(x), 1
    for _ in range(steps):
        s = torch.sigmoid(-y * (X @ x))
        g = -(X.T @ (y * s)) / n + shift + rho * (x - center)
        if g.norm() <= tol:
            break
        H = (X.T * (s * (1 - s))) @ X / n + rho * torch.eye(X.shape[1], dtype=X.dtype)
        step, t = torch.linalg.solve(H, g), 1.0
        while (f_new := phi(x - t * step)) > f - 0.25 * t * g.dot(step) and t > 1e-10:
            t, evals = t / 2, evals + 1
        x, f, evals = x - t * step, f_new, evals + 1
    return x, evals


def _check_data(X, y):
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    if X.dim() != 2 or not X.is_floating_point() or len(X) == 0:
        raise ValueError(f"X must be a non-empty 2-D float tensor (samples x features), got shape "
                         f"{tuple(X.shape)} {X.dtype}")
    if y.dim() != 1 or len(y) != len(X):
        raise ValueError(f"y must be a 1-D tensor of {len(X)} labels (one per row of X), got shape {tuple(y.shape)}")
    labels = set(torch.unique(y).tolist())
    if not (labels <= {0, 1} or labels <= {-1, 1}):
        raise ValueError(f"y must hold labels in {{0, 1}} or {{-1, 1}}, got values {sorted(labels)}")
    y = y.to(torch.float64)
    return X.to(torch.float64), 2 * y - 1 if 0 in labels else y


def _worker(comm, X, y, n, rho):
    """Worker: wait for z~, do the x and dual updates, send (x_i, lam_i); stop on flag 0."""
    d, master = X.shape[1], comm.world_size - 1
    x, lam_i = torch.zeros(d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64)
    while True:
        msg = comm.recv(master, DOWN)
        if msg[-1] == 0:
            return None
        z = msg[:-1]  # x_i <- argmin f_i(x) + lam_i^T (x - z) + rho/2 ||x - z||^2, warm-started
        x, evals = _newton(X, y, n, z, lam_i, rho, x, NEWTON_STEPS)
        m = len(X)  # FLOPs: per Newton step gradient + Hessian + solve, per evaluation X @ v
        comm.compute(flops=NEWTON_STEPS * (4 * m * d + 2 * m * d * d + d ** 3 / 3) + evals * 2 * m * d)
        lam_i = lam_i + rho * (x - z)
        comm.send(torch.cat([x, lam_i]), master, UP)


def _master(comm, X, y, rho, lam, partial, max_delay, iterations):
    """Master: partial barrier + bounded delay, closed-form z, reply to the workers heard."""
    N, d = comm.world_size - 1, X.shape[1]
    take = comm.recv_first if hasattr(comm, "recv_first") else lambda sources, tag: comm.recv_any(tag)
    xs, lams = torch.zeros(N, d, dtype=torch.float64), torch.zeros(N, d, dtype=torch.float64)
    z = torch.zeros(d, dtype=torch.float64)
    heard = [0] * N  # the master's last iteration with an update of worker w: w now computes from z^heard[w]
    hist = AdmmHistory()
    for w in range(N):
        comm.send(torch.cat([z, torch.ones(1, dtype=torch.float64)]), w, DOWN)
    for k in range(1, iterations + 1):
        got = []
        while len(got) < partial or any(k - heard[w] >= max_delay for w in range(N) if w not in got):
            w, msg = take([v for v in range(N) if v not in got], UP)
            xs[w], lams[w] = msg[:d], msg[d:]
            got.append(w)
        z = (rho * xs + lams).sum(0) / (lam + N * rho)
        comm.compute(flops=3 * N * d)
        hist.delay.append(max(k - heard[w] for w in got))
        for w in sorted(got):
            heard[w] = k
            if k < iterations:
                comm.send(torch.cat([z, torch.ones(1, dtype=torch.float64)]), w, DOWN)
        hist.objective.append(logistic_objective(X, y, lam, z))
        hist.residual.append(float((xs - z).norm()))
        hist.time.append(comm.now)
        hist.contributors.append(tuple(sorted(got)))
    for w in range(N):  # the last iteration's reply is a stop; take the others' pending updates first
        if w not in got:
            comm.recv(w, UP)
        comm.send(torch.zeros(d + 1, dtype=torch.float64), w, DOWN)
    hist.z = z
    return hist


def _rank(comm, X, y, shards, rho, lam, partial, max_delay, iterations):
    if comm.rank == comm.world_size - 1:
        return _master(comm, X, y, rho, lam, partial, max_delay, iterations)
    idx = shards[comm.rank]
    return _worker(comm, X[idx], y[idx], len(X), rho)


def consensus_admm(X, y, workers: int = 4, rho: float = 0.05, lam: float = 1e-2, partial: int | None = None,
                   max_delay: int = 1, iterations: int = 100, runtime: str = "threads", net=None, seed: int = 0,
                   timeout: float = 60.0) -> AdmmHistory:
    """Run asynchronous consensus ADMM for L2-regularized logistic regression.

    X: (n, d) float samples; y: n labels in {0, 1} or {-1, 1}; workers: N (the run has N + 1
    ranks, the master last); partial: S, the updates the master waits for (default N);
    max_delay: tau, every worker is heard from within tau master iterations; iterations:
    master iterations K; net: a network model for the simulated clock; seed: the IID split.
    partial=None, max_delay=1 is synchronous ADMM. rho is on the scale of the curvature of one
    f_i (about 0.25 * feature variance / N): much larger rho converges slowly, the
    asynchronous runs more so."""
    X, y = _check_data(X, y)
    checks.integer("workers", workers, 1, len(X), got=True, numpy=True)
    partial = workers if partial is None else partial
    checks.integer("partial", partial, 1, workers, got=True, numpy=True)
    checks.integer("max_delay", max_delay, 1, got=True, numpy=True)
    checks.integer("iterations", iterations, 1, got=True, numpy=True)
    if not rho > 0:
        raise ValueError(f"rho must be > 0, got {rho!r}")
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam!r}")
    shards = split_iid(len(X), workers, seed)
    results = launch(_rank, int(workers) + 1, runtime=runtime, net=net, timeout=timeout,
                     args=(X, y, shards, float(rho), float(lam), int(partial), int(max_delay), int(iterations)))
    hist = results[-1]
    hist.config = dict(workers=workers, rho=rho, lam=lam, partial=partial, max_delay=max_delay,
                       iterations=iterations, runtime=runtime, seed=seed)
    return hist
