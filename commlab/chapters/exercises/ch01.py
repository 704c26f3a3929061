"""Exercises of chapter 01: why communication limits data-parallel training."""
from __future__ import annotations

from ...net import speedup
from ...models import SURVEY_FIGURES
from . import check_number


def check_c2c_ratio(answer) -> bool:
    """Exercise 1: the C2C ratio f(N)/(M I) of BERT-Large at N = 32 workers with M = 8
    samples per worker, using the survey's intensity I = 248."""
    want = speedup.c2c_ratio(SURVEY_FIGURES["bert-large"]["intensity"], 8, 32)
    return check_number("C2C ratio of BERT-Large", answer, want, hint="f(N) = 2(N-1)/N for a ring.")


def check_speedup(answer) -> bool:
    """Exercise 2: speedup S(16) of ResNet-50 (D = 25.6e6, C = 24.5e9 FLOPs/sample) with a
    global batch of 256 at 10 TFLOP/s per worker on 10GbE."""
    want = speedup.speedup(25_600_000, 24.5e9, 256, 16, "10GbE", flops=1e13)
    return check_number("ResNet-50 speedup at 16 workers", answer, want,
                        hint="t_s = B C / F; t_m = 2(N-1) alpha + 2(N-1)/N 4D beta.")


def check_max_workers(answer) -> bool:
    """Exercise 3: the largest N in 1..256 whose parallel efficiency S(N)/N is at least 50%
    for the setting of exercise 2."""
    ok = [n for n in range(1, 257)
          if speedup.step_time(25_600_000, 24.5e9, 256, n, "10GbE", flops=1e13).efficiency >= 0.5]
    return check_number("largest N at 50% efficiency", answer, max(ok), rel=0.0)
