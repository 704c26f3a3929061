"""Chapter 05 exercise checks: open, right and wrong answers; they print and never raise."""
import math

import pytest
import torch

from commlab.chapters.exercises import ch05
from commlab.sync.dynamic_batch import DynamicBatch
from commlab.train import Trainer
from exercise_contract import assert_check_contract, assert_unanswered


# ----------------------------------------------------------------------------- numbers by hand
def _bytes_by_hand():
    n, d = 16, 25.6e6
    return 1000 / 8 * 2 * (n - 1) / n * 4 * d        # 125 all-reduces of 102.4 MB


def _dynamic_by_hand():
    used, t = 0, 0
    while used < 100_000:
        used += min(round(32 * 1.1 ** t), 1024)
        t += 1
    return t


RIGHT = {
    ch05.check_local_sgd_bytes: _bytes_by_hand,
    ch05.check_fedavg_steps: lambda: 3 * 8,            # 250 = 7 x 32 + 26: eight batches per epoch
    ch05.check_dynamic_rounds: _dynamic_by_hand,
}
WRONG = {
    ch05.check_local_sgd_bytes: 1000 * 2 * 15 / 16 * 4 * 25.6e6,    # BSP's bytes: an all-reduce every step
    ch05.check_fedavg_steps: 3 * (250 // 32),                           # the short batch dropped
    ch05.check_dynamic_rounds: 100_000 // 32,                           # fixed batches
}
CHECKS = list(RIGHT)
IDS = [c.__name__ for c in CHECKS]


def test_by_hand_values():
    assert _bytes_by_hand() == pytest.approx(2.4e10)
    assert _dynamic_by_hand() == 125
    assert ch05.dynamic_rounds(32, 1.0, None, 100_000) == 3125                # no growth: fixed batches
    assert ch05.fedavg_steps(256, 32, 2) == 16 and ch05.fedavg_steps(1, 32, 1) == 1


@pytest.mark.parametrize("check", CHECKS, ids=IDS)
def test_check_contract(check, capsys):
    assert_check_contract(check, RIGHT[check](), WRONG[check], capsys)


def test_fedavg_average_unanswered(capsys):
    assert_unanswered(ch05.check_fedavg_average, capsys)


# ----------------------------------------------------------------------------- what the library does
def test_local_sgd_bytes_is_what_the_trainer_sends():
    # 4 workers, H = 4, 8 steps: two ring all-reduces of the MLP's fp32 parameters
    run = Trainer(model="mlp", data="digits", workers=4, sync="local_sgd(period=4)", net="10GbE",
                  progress=False, eval_every=8)
    h = run.fit(steps=8)
    assert h.total_bytes_sent() == [ch05.local_sgd_bytes(4, run.num_params, 8, 4)] * 4


def test_fedavg_steps_is_what_fedavg_does():
    # one round, one client with n_k samples: the client's losses are one per local step
    run = Trainer(model="mlp", data="digits", workers=2, sync="fedavg(fraction=1.0, epochs=3)", progress=False,
                  eval_every=1)
    h = run.fit(steps=1)
    shard = min(len(s) for s in run.shards)
    assert h.samples[0] == sum(3 * len(s) for s in run.shards)          # E passes over every shard
    assert ch05.fedavg_steps(shard, 32, 3) == 3 * math.ceil(shard / 32)


def test_dynamic_rounds_follows_the_library_schedule():
    sync = DynamicBatch(1.1, 1024)
    sizes = [sync.batch_size(32, t) for t in range(125)]
    assert sum(sizes[:124]) < 100_000 <= sum(sizes)
    assert sizes[-1] == 1024 and sizes[0] == 32


# ----------------------------------------------------------------------------- exercise 3
def weighted(models, sizes):
    n = sum(sizes)
    return sum(s / n * m for m, s in zip(models, sizes))


def plain_mean(models, sizes):
    return torch.stack(models).mean(0)


def sum_not_mean(models, sizes):
    return sum(s * m for m, s in zip(models, sizes))


def flattened(models, sizes):
    return weighted(models, sizes).flatten()


def raising(models, sizes):
    raise RuntimeError("oops")


def test_fedavg_average_passes(capsys):
    assert ch05.check_fedavg_average(weighted) is True
    assert "correct" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("fn,says", [
    (plain_mean, "plain mean"),
    (sum_not_mean, "expected"),
    (flattened, "shape"),
    (raising, "oops"),
])
def test_fedavg_average_failures_say_why(fn, says, capsys):
    assert ch05.check_fedavg_average(fn) is False
    assert says in " ".join(capsys.readouterr().out.split())


def test_fedavg_average_reference():
    out = ch05.fedavg_average([torch.tensor([1.0, 2.0]), torch.tensor([3.0, 6.0])], [1, 3])
    assert torch.allclose(out, torch.tensor([2.5, 5.0], dtype=torch.float64))
