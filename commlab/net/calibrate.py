"""Fit a LinkModel to the runtime in use by ping-pong (Hockney 1994).

Rank 0 and rank 1 bounce messages of growing size; half the median round trip is the
one-way time T(n). A least-squares line T(n) = alpha + beta * n through the points gives
the link. Every rank must call ``calibrate(comm)``; ranks other than 0 and 1 wait at a
barrier. All ranks return the same LinkModel.
"""
from __future__ import annotations

import statistics
import time

import torch

from .link import LinkModel

DEFAULT_SIZES = (8, 1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 22)


def fit_alpha_beta(sizes, times) -> tuple[float, float]:
    """Fit times = alpha + beta * sizes in relative error (each row divided by its time),
    so the small messages that carry alpha count as much as the large ones that carry
    beta. Both are clipped at zero."""
    n = torch.tensor(sizes, dtype=torch.float64)
    t = torch.tensor(times, dtype=torch.float64)
    w = 1.0 / t.clamp_min(1e-12)
    A = torch.stack([torch.ones_like(n), n], dim=1) * w.unsqueeze(1)
    alpha, beta = torch.linalg.lstsq(A, (t * w).unsqueeze(1)).solution.squeeze(1).tolist()
    return max(alpha, 0.0), max(beta, 0.0)


def ping_pong(comm, sizes=DEFAULT_SIZES, repeats: int = 10, warmup: int = 2) -> list[float]:
    """One-way seconds for each message size, measured between ranks 0 and 1 (others: [])."""
    if comm.rank > 1:
        return []
    times = []
    for n in sizes:
        buf = torch.zeros(max(1, n // 4), dtype=torch.float32, device=comm.device)
        samples = []
        for i in range(warmup + repeats):
            start = time.perf_counter()
            if comm.rank == 0:
                comm.send(buf, 1)
                comm.recv(1)
            elif comm.rank == 1:
                comm.send(comm.recv(0), 0)
            if i >= warmup:
                samples.append((time.perf_counter() - start) / 2)
        times.append(statistics.median(samples))
    return times


def calibrate(comm, sizes=DEFAULT_SIZES, repeats: int = 10) -> LinkModel:
    """Measure alpha and beta of this runtime's point-to-point path (needs 2+ ranks)."""
    if comm.world_size < 2:
        raise ValueError(f"calibrate needs world_size >= 2, got {comm.world_size}")
    params = torch.zeros(2, dtype=torch.float64)
    if comm.rank in (0, 1):
        times = ping_pong(comm, sizes, repeats)
        nbytes = [max(1, n // 4) * 4 for n in sizes]
        params = torch.tensor(fit_alpha_beta(nbytes, times), dtype=torch.float64)
    if comm.rank == 1:  # rank 0 and rank 1 fit nearly the same line; take rank 0's
        params.zero_()
    comm.broadcast(params, src=0)
    return LinkModel(params[0].item(), params[1].item(), f"calibrated({comm.backend})")
