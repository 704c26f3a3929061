"""Exercises of chapter 09: decentralized training."""
from __future__ import annotations

import torch

from ... import compress
from ...arch import ring
from ...decentral import gossip, topology
from ...decentral.tuning import choco_gossip, consensus_error
from ...net.link import LinkModel
from . import check_function, check_number

# Exercise 1: the spectral gap of a ring of 12 workers with the library's weights (1/3 per edge).
RING_N = 12

# Exercise 2: a model of 4 MB on 10 Gb/s Ethernet (alpha = 30 us). From how many workers n on is
# one D-PSGD step on a ring (a message of the whole model to each of 2 neighbours, one after the
# other) faster than one ring all-reduce of the model?
CROSSOVER = dict(model_bytes=4_000_000, alpha=30e-6, beta=8 / 10e9)

# Exercise 3: one step of CHOCO-Gossip, step(x, x_hat, w, gamma, q) -> (x, x_hat), on n x d
# tensors: q(v) compresses one row; w is the n x n mixing matrix (see the chapter).
CHOCO_TRIAL = dict(n=6, d=20, spec="topk(0.25)", gamma=0.4, steps=8)


def ring_gap(n: int = RING_N) -> float:
    """The spectral gap of the ring of ``n`` workers with the library's weights."""
    return topology.ring(n).spectral_gap()


def crossover_workers(setting=None) -> int:
    """The smallest n >= 3 for which the gossip step is strictly faster than the all-reduce."""
    s = setting or CROSSOVER
    link = LinkModel(s["alpha"], s["beta"])
    n = 3
    while gossip.cost(s["model_bytes"], 2, link) >= ring.cost(s["model_bytes"], n, link):
        n += 1
    return n


def check_ring_gap(answer) -> bool:
    """Exercise 1: the spectral gap of the ring of RING_N workers."""
    return check_number(f"spectral gap of a ring of {RING_N}", answer, ring_gap(), rel=0.01,
                        hint="W is circulant: its eigenvalues are 1/3 + (2/3) cos(2 pi k / n), k = 0..n-1; "
                             "the gap is 1 minus the largest |eigenvalue| after the first.")


def check_crossover(answer) -> bool:
    """Exercise 2: the smallest number of workers for which D-PSGD's step beats the all-reduce."""
    return check_number("workers where gossip beats the ring all-reduce", answer, crossover_workers(), rel=0.0,
                        hint="Gossip: 2 (alpha + M beta). Ring all-reduce: 2 (n-1) (alpha + M beta / n). "
                             "Compare the two for n = 3, 4, ...")


def _trial(step) -> None:
    s = CHOCO_TRIAL
    n, d = s["n"], s["d"]
    x0 = torch.randn(n, d, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    w = torch.as_tensor(topology.ring(n).mixing_matrix())
    for spec, gamma in ((None, 1.0), (s["spec"], s["gamma"])):
        c = compress.get(spec)
        q = (lambda v: v.clone()) if c is None else (lambda v, c=c: c(v))
        want = choco_gossip(x0, w, [c] * n, gamma, s["steps"])
        x, hat = x0.clone(), torch.zeros_like(x0)
        for t in range(s["steps"]):
            x, hat = step(x, hat, w, gamma, q)
            assert tuple(x.shape) == (n, d) and tuple(hat.shape) == (n, d), \
                f"step must return two {n} x {d} tensors, got shapes {tuple(x.shape)} and {tuple(hat.shape)}"
            got = consensus_error(x)
            assert abs(got - want[t + 1]) <= 1e-9 * max(1.0, want[t + 1]), (
                f"with compress={spec!r} and gamma={gamma}, the consensus error after step {t + 1} is {got:.6g}, "
                f"the library's CHOCO-Gossip gives {want[t + 1]:.6g}. Order: q_i = Q(x_i - x_hat_i), x_hat += q, "
                "then x += gamma (W x_hat - x_hat).")


def check_choco_step(step) -> bool:
    """Exercise 3: your CHOCO-Gossip step equals the library's (:func:`commlab.decentral.tuning.choco_gossip`)
    with exact messages (it must then be x <- W x) and with top-k."""
    return check_function("CHOCO-Gossip step", step, _trial)
