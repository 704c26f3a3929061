"""What advice must say about itself: where the compression model has been wrong, and whether a
measured profile fits the GPU at all.

* :data:`COMPRESSION_ERROR`: the compression model's median error on a measured grid,
  |predicted / measured - 1| of the speedup over no compression over GRACE's 105 compressed
  ResNet-50 cells, modelled as GRACE ran them (Horovod over CUDA-aware MPI, staged through host
  memory, each compressor sending what GRACE's code sends and costing the TensorFlow operations it
  runs:
  ``commlab.sim.grace.summary(grace.compare()).loc["all", "speedup_error"]``;
  tests/test_advisor_caveats.py recomputes it). :func:`within_error` marks each compressed row whose gain
  over the same configuration uncompressed is smaller than that: "measure first".
* :func:`zero_instead`: a measured profile records what one step holds (:mod:`commlab.sim.step_memory`);
  a data-parallel worker holds that with momentum SGD; where it does not fit the GPU, advice ranks
  the ZeRO stages that do (each shards more of the model state over the workers), and where none
  does it is refused with the ways out.
"""
from __future__ import annotations

import pandas as pd

from ..sim.step_memory import per_worker, zero_worker

COMPRESSION_ERROR = 0.226  # the module doc says where it comes from


def within_error(table: pd.DataFrame) -> pd.DataFrame:
    """Each compressed row's gain over the same configuration uncompressed, and a warning in its
    reasoning where that gain is within the compression model's error."""
    table["model_error"] = [COMPRESSION_ERROR if c is not None else 0.0 for c in table["compress"]]
    plain = {(r.sync, r.arch, r.schedule): r.time_s for r in table.itertuples() if r.compress is None}
    for i, r in table.iterrows():
        base = plain.get((r["sync"], r["arch"], r["schedule"]))
        if r["compress"] is None or base is None:
            continue
        gain = base / r["time_s"] - 1
        if abs(gain) < COMPRESSION_ERROR:
            table.at[i, "reasoning"] += (f"; {'faster' if gain > 0 else 'slower'} than uncompressed by {abs(gain):.0%}, "
                                         f"within the compression model's error on a measured grid "
                                         f"({COMPRESSION_ERROR:.0%}): measure first")
    return table


def zero_instead(profile, memory_gb: float, workers: int = 1) -> list[tuple[int, float]]:
    """The ZeRO stages to rank instead of data parallelism, as (stage, GB per GPU over ``workers``
    GPUs): [] when a data-parallel worker of the measured profile fits in ``memory_gb`` (or the
    profile recorded no memory); refused, with the ways out, when no stage fits either."""
    memory = profile.about.get("memory")
    if not memory:
        return []
    need = per_worker(memory, "momentum")["total"] / 1e9
    if need <= memory_gb:
        return []
    zero = {stage: zero_worker(memory, workers, stage) / 1e9 for stage in (1, 2, 3)}
    fitting = [(stage, gb) for stage, gb in zero.items() if gb <= memory_gb]
    if fitting:
        return fitting
    raise ValueError(f"advise: each data-parallel worker needs {need:.1f} GB at batch {profile.batch} (parameters, "
                     f"gradients, momentum and the activations measured), more than a GPU's {memory_gb:g} GB, and "
                     f"even ZeRO stage 3 over {workers} GPUs holds {zero[3]:.1f} GB per GPU, the activations whole: "
                     "split the model (commlab.parallel.planner) or measure a smaller batch")
