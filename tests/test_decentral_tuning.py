"""Tuning CHOCO's gamma on CHOCO-Gossip: the simulated gossip is X <- W X with exact messages
and gamma = 1, and CHOCO-SGD's own rule with zero gradients otherwise; exact compression picks
gamma = 1, top-k a smaller gamma; node compressors are seeded as the Trainer seeds them."""
import math

import pytest
import torch

from commlab.decentral import topology as T
from commlab.decentral.choco import CHOCO
from commlab.decentral.contraction import Scaled
from commlab.decentral.tuning import (GRID, choco_gossip, consensus_error, gamma_errors, node_compressors,
                                      tune_gamma)
from decentral_harness import models, run_rule


def test_exact_choco_gossip_is_powers_of_w():
    n, d, steps = 8, 5, 6
    X = models(n, d)
    W = torch.as_tensor(T.ring(n).mixing_matrix())
    errors = choco_gossip(X, W, [None] * n, 1.0, steps)
    for t in range(steps + 1):
        assert errors[t] == pytest.approx(consensus_error(torch.linalg.matrix_power(W, t) @ X), rel=1e-9, abs=1e-15)
    assert len(errors) == steps + 1 and errors[-1] < errors[0]


@pytest.mark.parametrize("spec,gamma", [("topk(0.25)", 0.4), ("scaled_sign", 0.3)])
def test_choco_gossip_is_choco_sgd_without_gradients(spec, gamma):
    n, d, steps = 6, 12, 5
    X = models(n, d)
    W = torch.as_tensor(T.ring(n).mixing_matrix())
    # the library's rule, run over Comm, with zero gradients
    out = run_rule(lambda: CHOCO(gamma), "ring", n, X, [torch.zeros_like(X)] * steps, spec)
    want = [consensus_error(x) for x in out]
    got = choco_gossip(X, W, node_compressors(spec, n), gamma, steps)
    assert got[1:] == pytest.approx(want, rel=1e-6)


def test_exact_compression_picks_gamma_one():
    assert tune_gamma(None, "ring", 8, 20, steps=20) == 1.0
    errors = gamma_errors(None, "ring", 8, 20, steps=20)
    assert list(errors) == list(GRID)
    assert all(errors[1.0] <= e for e in errors.values())


def test_the_scan_stops_past_the_best():
    grid = (1.0, 0.5, 0.2, 0.1)
    full = gamma_errors("qsgd(levels=255)", "ring", 6, 64, grid=grid, steps=20)
    short = gamma_errors("qsgd(levels=255)", "ring", 6, 64, grid=grid, steps=20, stop=100.0)
    assert list(short) == list(full)[:len(short)] and len(short) < len(full)
    assert all(short[g] == full[g] for g in short)
    assert short[list(short)[-1]] >= 100 * min(short.values())
    assert min(short, key=short.get) == min(full, key=full.get) == 1.0
    # a blow-up at gamma = 1 (inf) does not stop the scan
    assert len(gamma_errors("randk(0.05)", "ring", 6, 40, grid=grid, steps=60, stop=100.0)) > 2


def test_topk_picks_a_smaller_gamma():
    grid = (1.0, 0.6, 0.3, 0.1)
    errors = gamma_errors("topk(0.05)", "ring", 6, 100, grid=grid, steps=40)
    best = tune_gamma("topk(0.05)", "ring", 6, 100, grid=grid, steps=40)
    assert best < 1.0 and errors[best] == min(errors.values())
    assert errors[1.0] > 10 * errors[best]               # gamma = 1 with 5% of the coordinates is far worse


def test_blow_up_ends_with_inf():
    X = models(6, 40)
    W = torch.as_tensor(T.ring(6).mixing_matrix())
    errors = choco_gossip(X, W, node_compressors("randk(0.05)", 6), 1.0, 200)
    assert errors[-1] == math.inf and len(errors) < 201


def test_node_compressors_are_seeded_like_the_trainer():
    q = node_compressors("qsgd(levels=3)", 4, seed=10)
    assert all(isinstance(c, Scaled) for c in q)              # unbiased: scaled by 1 / (1 + theta)
    assert [c.inner.seed for c in q] == [10, 11, 12, 13]      # independent noise per node
    r = node_compressors("randk(0.1)", 4, seed=10)
    assert [c.inner.seed for c in r] == [0, 0, 0, 0]          # shared indices on every node
    t = node_compressors("topk(0.1)", 3)
    assert not any(isinstance(c, Scaled) for c in t)
    assert node_compressors(None, 3) == [None, None, None]


def test_bad_grid_and_spec():
    with pytest.raises(ValueError, match="gamma=0 in the grid"):
        tune_gamma("topk(0.1)", "ring", 4, 10, grid=(1.0, 0), steps=3)
    with pytest.raises(ValueError, match="not a contraction"):
        tune_gamma("signsgd", "ring", 4, 10, steps=3)
