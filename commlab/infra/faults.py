"""Fault tolerance: how often a large job fails, how often to checkpoint, and what is left.

**Failures.** If each of N GPUs (with its share of hosts, NICs and cables) fails independently at
rate 1/M_gpu, the job fails at rate N/M_gpu: its mean time between failures is M = M_gpu / N.
LLaMA 3's 54-day snapshot on 16,384 H100 GPUs had 419 unexpected interruptions (Dubey et al.,
"The Llama 3 Herd of Models", 2024, section 3.3.4): a job MTBF of about 3.1 hours, so about
5.8 years per GPU, which :data:`LLAMA3_GPU_MTBF` derives.

**Checkpointing.** Every tau seconds of work the job pays C seconds to save a checkpoint; a
failure loses the work since the last one (tau/2 on average, plus half a checkpoint) and R
seconds to restart. To first order the fraction of time that is useful work (the goodput) is::

    goodput(tau) = tau / (tau + C) x (1 - ((tau + C)/2 + R) / M)

and the interval that maximises it is Young's (1974), refined by Daly (2006):
``tau* = sqrt(2 C M)``. :func:`simulate` runs the process itself, exponential failures and all,
so the formula can be checked against it.
"""
from __future__ import annotations

import math

import numpy as np

from .. import checks

HOUR = 3600.0
LLAMA3_GPU_MTBF = 54 * 24 * HOUR / 419 * 16384  # seconds per GPU


MAX_ATTEMPTS = 10 ** 7  # segment attempts simulate() may draw, over all runs (about 10 s)


def _positive(name, v):
    checks.positive(name, v, unit="seconds")


def job_mtbf(gpus: int, gpu_mtbf: float = LLAMA3_GPU_MTBF) -> float:
    """Seconds between failures of a job on ``gpus`` GPUs that each fail every ``gpu_mtbf`` s."""
    checks.count("gpus", gpus)
    _positive("gpu_mtbf", gpu_mtbf)
    return gpu_mtbf / gpus


def young_daly(checkpoint: float, mtbf: float) -> float:
    """The checkpoint interval that maximises goodput, sqrt(2 C M) seconds."""
    _positive("checkpoint", checkpoint)
    _positive("mtbf", mtbf)
    return math.sqrt(2 * checkpoint * mtbf)


def goodput(interval: float, checkpoint: float, mtbf: float, restart: float = 0.0) -> float:
    """First-order fraction of wall time that is useful work (see the module doc), at least 0."""
    _positive("interval", interval)
    _positive("checkpoint", checkpoint)
    _positive("mtbf", mtbf)
    checks.number("restart", restart, 0, unit="seconds")
    lost = ((interval + checkpoint) / 2 + restart) / mtbf
    return max(0.0, interval / (interval + checkpoint) * (1 - lost))


def simulate(interval: float, checkpoint: float, mtbf: float, restart: float = 0.0, work: float | None = None,
             runs: int = 200, seed: int = 0) -> float:
    """Goodput measured on ``runs`` simulated jobs of ``work`` seconds of work (default 50 MTBFs):
    segments of ``interval`` work then a ``checkpoint``; a failure (exponential, mean ``mtbf``)
    anywhere in a segment or its checkpoint loses that segment and costs ``restart``."""
    goodput(interval, checkpoint, mtbf, restart)  # the same checks
    work = 50 * mtbf if work is None else checks.positive("work", work, unit="seconds", where="simulate")
    checks.count("runs", runs, where="simulate")
    checks.count("seed", seed, 0, where="simulate")
    # each segment is tried until it survives: exp((interval + C) / M) tries on average
    attempts = runs * math.ceil(work / interval) * math.exp(min((interval + checkpoint) / mtbf, 700.0))
    if attempts > MAX_ATTEMPTS:
        raise ValueError(f"simulate: {runs} runs of {work:g} s of work in segments of {interval:g} s (checkpoint "
                         f"{checkpoint:g} s, MTBF {mtbf:g} s) would draw about {attempts:.1e} segments, above "
                         f"{MAX_ATTEMPTS:.0e}; use a longer interval (Young/Daly's is {young_daly(checkpoint, mtbf):.3g} s), "
                         "less work or fewer runs")
    rng = np.random.default_rng(seed)
    total_wall = 0.0
    for _ in range(runs):
        done, wall = 0.0, 0.0
        while done < work:
            segment = min(interval, work - done)
            need = segment + checkpoint
            fail = rng.exponential(mtbf)
            if fail >= need:
                done += segment
                wall += need
            else:
                wall += fail + restart
        total_wall += wall
    return runs * work / total_wall
