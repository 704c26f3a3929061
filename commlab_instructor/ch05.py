"""Reference solutions of chapter 05: local SGD, FedAvg and dynamic batch sizes."""
from __future__ import annotations

VARIABLES = {"check_local_sgd_bytes": "answer", "check_fedavg_steps": "answer",
             "check_fedavg_average": "my_average", "check_dynamic_rounds": "answer"}


def local_sgd_bytes():
    """Exercise 1: bytes per worker in 1000 steps of local SGD, H = 8, N = 16, ResNet-50 by a ring."""
    N, D, T, H = 16, 25.6e6, 1000, 8
    averages = T // H                              # one all-reduce every H steps
    return averages * 2 * (N - 1) / N * 4 * D      # each a ring all-reduce of 4D bytes


def fedavg_steps():
    """Exercise 2: local steps of a FedAvg round: E passes of ceil(n_k / M) batches."""
    import math

    n_k, E, M = 250, 3, 32
    return E * math.ceil(n_k / M)      # the last batch of a pass is short, not skipped


def fedavg_average():
    """Exercise 3: ``my_average(models, sizes)``, sum_k n_k x_k / sum_k n_k."""
    def my_average(models, sizes):
        total = sum(sizes)
        return sum(n / total * x for n, x in zip(sizes, models))
    return my_average


def dynamic_rounds():
    """Exercise 4: steps until a worker has used 100,000 samples, B_t = min(round(32 * 1.1^t), 1024)."""
    from commlab.sync.dynamic_batch import DynamicBatch

    sync = DynamicBatch(growth=1.1, max_batch=1024)
    used, t = 0, 0
    while used < 100_000:
        used += sync.batch_size(32, t)
        t += 1
    return t
