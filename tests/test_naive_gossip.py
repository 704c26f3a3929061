"""Naive compressed gossip equals X <- W C(X) - lr G."""
import torch

from commlab.decentral.naive_gossip import NaiveGossip
from decentral_harness import LR, gradients, mixing, models, rows, run_rule


def test_naive_gossip_matches_its_matrix_form():
    n, d = 6, 10
    X, Gs = models(n, d), gradients(n, d, 3)
    out = run_rule(NaiveGossip, "ring", n, X, Gs, "topk(0.3)")
    W = mixing("ring", n)
    for G, got in zip(Gs, out):
        X = W @ rows("topk(0.3)", X) - LR * G
        torch.testing.assert_close(got, X, rtol=1e-6, atol=1e-6)
