"""Chapter 09 exercise checks: open, right and wrong answers; they print and never raise."""
import math

import pytest
import torch

from commlab.arch import ring
from commlab.chapters.exercises import ch09
from commlab.decentral import gossip
from commlab.net.link import LinkModel
from exercise_contract import assert_check_contract, assert_unanswered

NUMBER_CHECKS = [ch09.check_ring_gap, ch09.check_crossover]
IDS = [c.__name__ for c in NUMBER_CHECKS]
RIGHT = {
    ch09.check_ring_gap: 2 / 3 * (1 - math.cos(2 * math.pi / 12)),   # 1 - (1/3 + 2/3 cos(2 pi / n))
    ch09.check_crossover: 12,                                        # n (n - 2) > M beta / alpha = 106.7
}
WRONG = {
    ch09.check_ring_gap: 1 / 12,        # 1/n: a guess, not the spectrum
    ch09.check_crossover: 11,           # 11 * 9 = 99 < 106.7
}


def test_by_hand_values_are_the_librarys():
    assert ch09.ring_gap() == pytest.approx(RIGHT[ch09.check_ring_gap], rel=1e-12)
    s = ch09.CROSSOVER
    link = LinkModel(s["alpha"], s["beta"])
    assert ch09.crossover_workers() == 12
    g = gossip.cost(s["model_bytes"], 2, link)
    assert ring.cost(s["model_bytes"], 12, link) > g >= ring.cost(s["model_bytes"], 11, link)
    assert 12 * 10 > s["model_bytes"] * s["beta"] / s["alpha"] > 11 * 9


@pytest.mark.parametrize("check", NUMBER_CHECKS, ids=IDS)
def test_check_contract(check, capsys):
    assert_check_contract(check, RIGHT[check], WRONG[check], capsys)


def right_step(x, hat, w, gamma, q):
    hat = hat + torch.stack([q(x[i] - hat[i]) for i in range(len(x))])
    return x + gamma * (w @ hat - hat), hat


def mix_the_models(x, hat, w, gamma, q):        # gossips x itself: right only for exact messages
    hat = hat + torch.stack([q(x[i] - hat[i]) for i in range(len(x))])
    return x + gamma * (w @ x - x), hat


def mix_before_exchange(x, hat, w, gamma, q):    # the public copies lag one step
    new = x + gamma * (w @ hat - hat)
    return new, hat + torch.stack([q(x[i] - hat[i]) for i in range(len(x))])


def test_choco_step(capsys):
    assert_unanswered(ch09.check_choco_step, capsys)
    assert ch09.check_choco_step(right_step) is True
    assert "correct" in " ".join(capsys.readouterr().out.split())
    for wrong in (mix_the_models, mix_before_exchange):
        assert ch09.check_choco_step(wrong) is False
        assert "not yet" in " ".join(capsys.readouterr().out.split())
    assert ch09.check_choco_step(lambda x, hat, w, gamma, q: (x[:2], hat)) is False
    assert "must return two" in " ".join(capsys.readouterr().out.split())
    assert ch09.check_choco_step(lambda *a: 1 / 0) is False
    assert "ZeroDivisionError" in " ".join(capsys.readouterr().out.split())
