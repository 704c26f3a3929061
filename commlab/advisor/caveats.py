"""What advice must say about itself: where the compression model has been wrong, and whether a
measured profile fits the GPU at all.

* :data:`COMPRESSION_ERROR`: the compression model's median error on a measured grid,
  |predicted / measured - 1| of the speedup over no compression over GRACE's 105 compressed
  ResNet-50 cells, modelled as GRACE ran them (Horovod over MPI, staged through host memory:
  ``commlab.sim.grace.summary(grace.compare()).loc["all", "speedup_error"]``;
  tests/test_advisor_caveats.py recomputes it). :func:`within_error` marks each compressed row whose gain
  over the same configuration uncompressed is smaller than that: "measure first".
* :func:`fits`: a measured profile records what one step holds (:mod:`commlab.sim.step_memory`);
  a data-parallel worker holds that with momentum SGD, and advice on a GPU it does not fit is
  refused with the ways out.
"""
from __future__ import annotations

import pandas as pd

from ..sim.step_memory import per_worker, zero_worker

COMPRESSION_ERROR = 0.272  # the module doc says where it comes from


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


def fits(profile, memory_gb: float, workers: int = 1) -> None:
    """Refuse data parallelism for a measured profile whose worker does not fit in ``memory_gb``,
    naming the ZeRO stages that would fit over ``workers`` GPUs and what each holds."""
    memory = profile.about.get("memory")
    if not memory:
        return
    need = per_worker(memory, "momentum")["total"] / 1e9
    if need <= memory_gb:
        return
    zero = {stage: zero_worker(memory, workers, stage) / 1e9 for stage in (1, 2, 3)}
    fitting = [f"arch='zero(stage={s})' holds {gb:.1f} GB per GPU" for s, gb in zero.items() if gb <= memory_gb]
    way_out = (f"over {workers} GPUs, " + "; ".join(fitting) + " (the advisor does not time ZeRO for a measured "
               "profile: train it, or simulate it)" if fitting else
               f"even ZeRO stage 3 over {workers} GPUs holds {zero[3]:.1f} GB per GPU, the activations whole: split "
               "the model (commlab.parallel.planner) or measure a smaller batch")
    raise ValueError(f"advise: each data-parallel worker needs {need:.1f} GB at batch {profile.batch} (parameters, "
                     f"gradients, momentum and the activations measured), more than a GPU's {memory_gb:g} GB: no "
                     f"data-parallel configuration fits. {way_out}")
