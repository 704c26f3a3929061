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

HOUR = 3600.0
LLAMA3_GPU_MTBF = 54 * 24 * HOUR / 419 * 16384  # seconds per GPU


def _positive(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or math.isinf(v):
        raise ValueError(f"{name}={v!r} must be a number of seconds > 0")


def job_mtbf(gpus: int, gpu_mtbf: float = LLAMA3_GPU_MTBF) -> float:
    """Seconds between failures of a job on ``gpus`` GPUs that each fail every ``gpu_mtbf`` s."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ValueError(f"gpus={gpus!r} must be an integer >= 1")
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
    if restart < 0:
        raise ValueError(f"restart={restart!r} must be a number of seconds >= 0")
    lost = ((interval + checkpoint) / 2 + restart) / mtbf
    return max(0.0, interval / (interval + checkpoint) * (1 - lost))


def simulate(interval: float, checkpoint: float, mtbf: float, restart: float = 0.0, work: float | None = None,
             runs: int = 200, seed: int = 0) -> float:
    """Goodput measured on ``runs`` simulated jobs of ``work`` seconds of work (default 50 MTBFs):
    segments of ``interval`` work then a ``checkpoint``; a failure (exponential, mean ``mtbf``)
    anywhere in a segment or its checkpoint loses that segment and costs ``restart``."""
    goodput(interval, checkpoint, mtbf, restart)  # the same checks
    work = 50 * mtbf if work is None else work
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
