"""Choosing CHOCO-SGD's consensus step gamma on the gossip problem alone.

CHOCO-SGD (:mod:`commlab.decentral.choco`; Koloskova, Lin, Stich and Jaggi, ICLR 2020) needs
a consensus step gamma matched to its compressor: gamma = 1 is right for exact messages, and
the stronger the compression (the smaller its omega), the smaller gamma must be, or the public
copies x_hat chase the models with errors that the gossip amplifies. The paper says gamma is
tuned; the authors' code (epfml/ChocoSGD, ``tune_consensus_stepsize.py``) does it as here, on
CHOCO-Gossip (Koloskova, Stich and Jaggi, ICML 2019), the same exchange without gradients:
average consensus of n random vectors the size of the model. Here it runs in one process with
the topology's mixing matrix W and the compressor the training would use (one object per node,
seeded as the Trainer seeds them, made a contraction by
:func:`~commlab.decentral.contraction.contraction`), in the order CHOCO-SGD runs it::

    q_i = Q(x_i - x_hat_i);   x_hat_i <- x_hat_i + q_i;   x_i <- x_i + gamma sum_j W_ij (x_hat_j - x_hat_i)

With Q exact and gamma = 1 this is X <- W X (x_hat = X after the exchange). The consensus
error e_t = (1/n) sum_i ||x_i - x_bar||^2 shrinks linearly at a rate that depends on gamma,
omega and the spectral gap delta; :func:`tune_gamma` returns the gamma of the grid with the
smallest e_T after T steps (the authors' code adds the error ||x - x_hat||^2 to the criterion
and searches a finer grid, 20 points from 0.001 to 1, for 1000 steps). The grid is scanned from
gamma = 1 down, and the scan stops once the error is 100 times the best so far: past the best
gamma, smaller ones only converge slower. A few dozen gossip steps per gamma cost about a
second, against a training run per grid point.

What it leaves out: in training the gradient steps keep pushing the models apart, which the
gossip problem does not model; the gamma it picks is a good start, not an optimum for SGD.
"""
from __future__ import annotations

import math

import torch

from .. import compress as compress_pkg
from . import topology as topology_pkg
from .contraction import contraction

GRID = (1.0, 0.8, 0.6, 0.4, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01)


def node_compressors(spec, n: int, seed: int = 0) -> list:
    """One compressor per node, as the Trainer builds them (``commlab.train``): its own random
    stream (seed + node) unless its randomness must agree across nodes (rand-k's indices); each
    made a contraction for CHOCO (None for exact messages)."""
    out = []
    for i in range(n):
        c = compress_pkg.get(spec)
        if c is not None:
            if not getattr(c, "shared_seed", c.aggregation == "sum"):
                c.seed = c.seed + seed + i
            c = contraction(c, spec)
        out.append(c)
    return out


def consensus_error(x: torch.Tensor) -> float:
    """(1/n) sum_i ||x_i - x_bar||^2 of the rows of ``x``."""
    return float((x - x.mean(0)).pow(2).sum(1).mean())


def choco_gossip(x0: torch.Tensor, w, compressors, gamma: float, steps: int) -> list[float]:
    """CHOCO-Gossip from the rows of ``x0`` (n x d) with mixing matrix ``w`` (n x n) and one
    compressor per row (None: exact): the consensus errors e_0, e_1, ..., e_steps. A run that
    blows up ends with ``inf``."""
    x = x0.detach().to(torch.float64).clone()
    w = torch.as_tensor(w, dtype=torch.float64)
    hat = torch.zeros_like(x)
    errors = [consensus_error(x)]
    for _ in range(steps):
        diff = x - hat
        q = torch.stack([diff[i] if c is None else c(diff[i], "model").to(x.dtype)
                         for i, c in enumerate(compressors)])
        hat += q
        x += gamma * (w @ hat - hat)
        e = consensus_error(x)
        if not math.isfinite(e) or e > 1e12 * max(errors[0], 1e-300):
            errors.append(math.inf)
            break
        errors.append(e)
    return errors


def gamma_errors(compressor_spec, topology, n: int, d: int, grid=GRID, steps: int = 200, seed: int = 0,
                 stop: float | None = None) -> dict[float, float]:
    """{gamma: final consensus error / initial} of CHOCO-Gossip for each gamma of ``grid``, from the
    same random start (standard normal n x d, drawn from ``seed``) and the same compressor seeds.
    The grid is scanned from the largest gamma down; with ``stop``, the scan ends at the first gamma
    whose error is ``stop`` times the best so far (past the best, smaller gammas only get slower)."""
    top = topology_pkg.get(topology, n)
    w = torch.as_tensor(top.mixing_matrix())
    x0 = torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    e0 = consensus_error(x0)
    out = {}
    for gamma in sorted(grid, reverse=True):
        if isinstance(gamma, bool) or not 0 < gamma <= 1:
            raise ValueError(f"gamma={gamma!r} in the grid is out of range; valid: 0 < gamma <= 1")
        errors = choco_gossip(x0, w, node_compressors(compressor_spec, n, seed), gamma, steps)
        out[float(gamma)] = errors[-1] / e0
        best = min(out.values())
        if stop is not None and math.isfinite(best) and out[float(gamma)] >= stop * best > 0:
            break
    return out


def tune_gamma(compressor_spec, topology, n: int, d: int, grid=GRID, steps: int = 200, seed: int = 0,
               stop: float | None = 100.0) -> float:
    """The gamma of ``grid`` whose CHOCO-Gossip run (n nodes on ``topology``, vectors of d
    coordinates, ``steps`` steps) ends with the smallest consensus error; on a tie, the larger
    gamma. ``compressor_spec``: a compressor spec ("topk(0.01)", "qsgd(levels=3)") or None;
    ``stop``: see :func:`gamma_errors` (None scans the whole grid)."""
    errors = gamma_errors(compressor_spec, topology, n, d, grid, steps, seed, stop)
    return min(errors, key=lambda g: (errors[g], -g))
