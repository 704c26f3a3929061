"""DGC: momentum correction, factor masking and clipping against a hand-written loop, the
warm-up schedule, and the equivalence with top-k + error feedback at momentum 0."""
import math

import pytest
import torch

from commlab.compress import ErrorFeedback
from commlab.compress.dgc import DGC
from commlab.compress.topk import TopK


def _reference(grads, density, m, clip=None):
    """DGC by hand, one coordinate at a time where it matters: returns what was sent."""
    d = grads[0].numel()
    u, v, sent = [0.0] * d, [0.0] * d, []
    for t, g in enumerate(grads):
        g = g.tolist()
        if clip is not None:
            norm = math.sqrt(sum(a * a for a in g))
            g = [a * min(1.0, clip / norm) for a in g]
        for i in range(d):
            u[i] = m * u[i] + g[i]
            v[i] = v[i] + u[i]
        k = max(1, round(density(t) * d))
        chosen = sorted(range(d), key=lambda i: -abs(v[i]))[:k]
        out = [0.0] * d
        for i in chosen:
            out[i] = v[i]
            v[i] = 0.0
            u[i] = 0.0  # momentum factor masking
        sent.append(torch.tensor(out, dtype=torch.float64))
    return sent


@pytest.mark.parametrize("clip", [None, 1.5])
def test_momentum_correction_and_masking_match_a_hand_written_loop(clip):
    g = torch.Generator().manual_seed(0)
    grads = [torch.randn(40, generator=g, dtype=torch.float64) for _ in range(6)]
    c = DGC(0.1, momentum=0.9, clip=clip)
    got = [c(x, key="w") for x in grads]
    want = _reference(grads, lambda t: 0.1, 0.9, clip)
    for a, b in zip(got, want):
        assert torch.allclose(a, b, atol=1e-12)


def test_warmup_schedule_is_exponential_from_75_to_the_target_sparsity():
    c = DGC(0.001, warmup_steps=4)
    dens = [c.density(t) for t in range(6)]
    assert dens[0] == 0.25 and dens[4] == dens[5] == 0.001
    ratios = [dens[t + 1] / dens[t] for t in range(4)]
    assert all(abs(r - (0.001 / 0.25) ** 0.25) < 1e-12 for r in ratios)
    assert [round(100 * (1 - x), 1) for x in dens[:5]] == [75.0, 93.7, 98.4, 99.6, 99.9]
    # what is sent follows it: step t of a 10000-vector sends round(density(t) * d) values
    grads = [torch.randn(10_000) for _ in range(6)]
    sizes = [c.compress(x, key="k")["val"].numel() for x in grads]
    assert sizes == [round(x * 10_000) for x in dens]
    assert DGC(0.5, warmup_steps=10).density(0) == 0.5  # denser than 25%: no warm-up
    # the warm-up against the hand-written loop too
    c2 = DGC(0.01, momentum=0.5, warmup_steps=3)
    g64 = [torch.randn(200, dtype=torch.float64) for _ in range(5)]
    for a, b in zip([c2(x) for x in g64], _reference(g64, c2.density, 0.5)):
        assert torch.allclose(a, b, atol=1e-12)


def test_state_is_per_key_and_reset():
    c = DGC(0.1)
    c(torch.ones(10), key="a")
    assert c.step("a") == 1 and c.step("b") == 0
    c.reset()
    assert c.step("a") == 0


def test_momentum_zero_is_topk_with_error_feedback():
    g = torch.Generator().manual_seed(3)
    grads = [torch.randn(500, generator=g, dtype=torch.float64) for _ in range(5)]
    dgc, ef = DGC(0.02, momentum=0.0), ErrorFeedback(TopK(0.02))
    for x in grads:
        assert torch.allclose(dgc(x), ef(x), atol=1e-12)
