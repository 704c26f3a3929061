"""Reference solutions of chapter 01: why communication limits data-parallel training."""
from __future__ import annotations

VARIABLES = {"check_c2c_ratio": "answer1", "check_speedup": "answer2", "check_max_workers": "answer3"}


def c2c_ratio():
    """Exercise 1: BERT-Large's C2C ratio f(N)/(M I) at N = 32, M = 8, I = 248."""
    N, M, I = 32, 8, 248
    f = 2 * (N - 1) / N               # gradient volumes a ring all-reduce sends per worker
    return f / (M * I)


def speedup():
    """Exercise 2: S(16) = t_s / (t_s/N + t_m) for ResNet-50, B = 256, 10 TFLOP/s, 10GbE."""
    from commlab.net import PROFILES

    D, C, B, F, N = 25.6e6, 24.5e9, 256, 1e13, 16
    link = PROFILES["10GbE"]
    t_s = B * C / F
    t_m = 2 * (N - 1) * link.alpha + 2 * (N - 1) / N * 4 * D * link.beta
    return t_s / (t_s / N + t_m)


def max_workers():
    """Exercise 3: the largest N <= 256 whose efficiency S(N)/N is at least 50%."""
    from commlab.net import PROFILES

    D, C, B, F = 25.6e6, 24.5e9, 256, 1e13
    link = PROFILES["10GbE"]
    t_s = B * C / F

    def efficiency(N):
        t_m = 2 * (N - 1) * link.alpha + 2 * (N - 1) / N * 4 * D * link.beta
        return t_s / (t_s / N + t_m) / N

    return max(N for N in range(1, 257) if efficiency(N) >= 0.5)
