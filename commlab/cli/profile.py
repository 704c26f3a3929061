"""``python -m commlab profile``: your own model's step measured layer by layer on this machine
(:func:`commlab.sim.measure`), each layer's measured share of the step printed beside its share of
the FLOPs (:func:`commlab.sim.measured.versus_flops`), and the profile saved
(:func:`commlab.sim.save_profile`) with the builder's name, so that advice on it prints the
``train`` command that runs it::

    python -m commlab profile --model pkg.module:builder --input 3x224x224 --batch 64 [--device cuda] --out my.json

``simulate --profile my.json`` and ``advise --profile my.json`` read it instead of a built-in model.
The builder and the input are read by :mod:`commlab.own_model`.
"""
from __future__ import annotations

import math
import re

import torch

from .. import sim
from ..own_model import builder, example_input
from ..sim.measured import versus_flops
from .outputs import check_output

NAME = "profile"
ROOT = "(the model's own parameters)"  # the layer of the root module's parameters, named "" in the file

PLAIN_HELP = """Measure one step of your model layer by layer on this machine, print each layer's share of
the step beside its share of the FLOPs, and save the profile as JSON.

A builder is named pkg.module:name (importable from where the command runs): a function that
returns an nn.Module, called with no argument, or with the data set it will train on if it takes
one. The profile keeps the builder's name, so advice on it prints the train command that runs it.
On a CPU each layer is timed with one math thread by default (--threads), by the thread's own CPU
time. Then: simulate --profile my.json [--device v100] and advise --profile my.json."""


def add(sub, fmt) -> None:
    """The ``profile`` subcommand."""
    p = sub.add_parser(NAME, help="measure your model's step layer by layer and save the profile",
                       formatter_class=fmt, description=PLAIN_HELP)
    p.add_argument("--model", required=True, help="pkg.module:builder, a function returning an nn.Module")
    p.add_argument("--input", required=True, help="one sample's shape, e.g. 3x224x224 (or 128 tokens with --vocab)")
    p.add_argument("--batch", type=int, default=32, help="samples per step (one worker's mini-batch)")
    p.add_argument("--vocab", type=int, default=None, help="the input is token ids below this")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--steps", type=int, default=10, help="timed steps (the median is kept)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch's math threads on a CPU (default 1: each layer timed by the thread's own CPU "
                        "time, which other programs do not lengthen)")
    p.add_argument("--warmup", type=int, default=3, help="steps run before timing")
    p.add_argument("--data", default=None,
                   help="pkg.module:loader (or a built-in set) the model trains on: recorded, so that advice prints a "
                        "train command that runs as it is")
    p.add_argument("--out", required=True, help="the profile file to write (.json)")


def run(p, a) -> int:
    """Measure, print the layers beside their FLOPs, save."""
    import pandas as pd

    check_output(p, "--out", a.out, (".json",))  # the profile can be written, before any measurement
    if not (a.device == "cpu" or a.device == "cuda" or re.fullmatch(r"cuda:\d+", a.device)):
        p.error(f"--device {a.device!r} is not a device to measure on; valid: cpu, cuda, cuda:N")
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        p.error(f"--device {a.device!r}: no CUDA GPU is visible here; valid: cpu")
    if a.threads < 1:
        p.error(f"--threads {a.threads} must be >= 1")
    if a.device == "cpu":
        torch.set_num_threads(a.threads)
    try:
        x = example_input(a.input, a.batch, a.vocab)
        model = builder(a.model)(None)
        prof = sim.measure(model, x, device=a.device, steps=a.steps, warmup=a.warmup)
    except ValueError as e:
        p.error(str(e))
    prof.about["model"] = a.model
    if a.data is not None:
        prof.about["data"] = a.data
    table = versus_flops(prof)
    try:
        sim.save_profile(prof, a.out)
    except OSError as e:
        p.error(f"--out {a.out!r}: {e.strerror or e}")
    shown = table.assign(layer=[n or ROOT for n in table["layer"]])
    with pd.option_context("display.width", 120):
        print(shown.round(4).to_string(index=False))
    t = table.attrs
    print(f"\n{prof.layers} layers, {prof.total_bytes / 1e6:.4g} MB of gradients, batch {prof.batch}, on "
          f"{prof.about['device']}: the layers add up to {t['measured_s'] * 1e3:.4g} ms, the step without hooks "
          f"takes {t['step_s'] * 1e3:.4g} ms; the FLOP count predicts "
          + (f"{t['flops_s'] * 1e3:.4g} ms at {t['flops_rate'] / 1e9:.4g} GFLOP/s" if t["flops_s"] else "nothing here"))
    low, high = prof.about["step_range_s"]
    print(f"the step without hooks over {a.steps} steps: fastest {low * 1e3:.4g} ms, median {t['step_s'] * 1e3:.4g} ms, "
          f"slowest {high * 1e3:.4g} ms"
          + (f"; WARNING: a spread of {high / low - 1:.0%}: the machine was busy, or the steps differ; measure again "
             "on a quiet machine, or with more --steps" if high > 1.2 * low else ""))
    counted = table[table["flops_share"] > 0]
    if len(counted):
        worst = counted.iloc[(counted["measured/flops"].map(math.log)).abs().argmax()]
        print(f"furthest from its FLOP share: {worst['layer'] or ROOT} ({percent(worst['measured_share'])} of the "
              f"step, {percent(worst['flops_share'])} of the FLOPs, {worst['measured/flops']:.3g} times its share)")
    free = table[table["flops_share"] == 0]
    if len(free):
        named = [n or ROOT for n in free["layer"].head(8)]
        print(f"no counted FLOPs (their time is not arithmetic the count sees): {', '.join(named)}"
              + (f" and {len(free) - 8} more" if len(free) > 8 else "")
              + f", {free['measured_share'].sum():.1%} of the step")
    print(f"wrote {a.out}")
    return 0


def percent(share: float) -> str:
    """A share as a percentage with three significant digits (0.0016%, not 0.0%: a layer with a
    sliver of the FLOPs is the one whose ratio stands out)."""
    return f"{100 * share:.3g}%"
