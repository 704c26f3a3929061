"""Your own model on the command line: ``python -m commlab profile``, and how ``train``,
``simulate`` and ``advise`` take your model, your data and a profile file.

* A **builder** is named ``pkg.module:name`` (the module importable from where the command runs):
  a function returning an ``nn.Module``, called with no argument, or with the
  :class:`commlab.data.Dataset` it will train on if it takes one.
* A **loader** is named the same way: a function of no argument returning a
  :class:`commlab.data.Dataset`, a ``torch.utils.data.Dataset`` of (sample, label) pairs, or a
  pair of tensors ``(x, y)`` (:func:`commlab.data.from_torch`, :func:`commlab.data.from_tensors`).
* ``profile --model pkg.module:builder --input 3x224x224 --batch 64 [--device cuda] --out my.json``
  measures the step layer by layer (:func:`commlab.sim.measure`; ``--vocab V`` makes the input
  token ids below V), prints each layer's measured share of the step beside its share of the
  FLOPs, and saves the profile (:func:`commlab.sim.save_profile`) with the builder's name, so
  that advice on it prints the ``train`` command that runs it.
* ``simulate --profile my.json`` and ``advise --profile my.json`` read it instead of a built-in
  model; :func:`provenance` says which numbers come from the measurement and which from models.
"""
from __future__ import annotations

import importlib
import inspect
import math
import re

import torch

from . import checks
from . import data as data_pkg
from . import sim
from .sim.measured import versus_flops


def import_object(text: str, flag: str):
    """The object named ``pkg.module:name``; a clear error for a name that is not one."""
    module, _, name = str(text).partition(":")
    if not module or not name:
        raise ValueError(f"{flag} {text!r}: name it as pkg.module:function")
    try:
        found = importlib.import_module(module)
    except ImportError as e:
        raise ValueError(f"{flag} {text!r}: cannot import {module!r} ({e}); run from the folder that holds it") from e
    if not hasattr(found, name):
        raise ValueError(f"{flag} {text!r}: module {module!r} has no {name!r}")
    return getattr(found, name)


def builder(text: str):
    """The Trainer's model from ``pkg.module:builder``: a function of no argument, or of the data
    set, returning an ``nn.Module``; as ``dataset -> nn.Module``, whose errors name the builder."""
    fn = import_object(text, "--model")
    if not callable(fn):
        raise ValueError(f"--model {text!r} is not a function")
    required = [p.name for p in inspect.signature(fn).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(required) > 1:
        raise ValueError(f"--model {text!r} takes {', '.join(required)}; a builder takes no argument, or one: "
                         "the data set")

    def build(dataset):
        try:
            model = fn(dataset) if required else fn()
        except Exception as e:  # noqa: BLE001 - the builder's own error, named
            raise ValueError(f"--model {text!r}: the builder raised {type(e).__name__}: {e}") from e
        if not isinstance(model, torch.nn.Module):
            raise ValueError(f"--model {text!r} returned {type(model).__name__}, not an nn.Module")
        return model
    return build


def loader(text: str, seed: int = 0) -> data_pkg.Dataset:
    """The data set from ``pkg.module:loader`` (see the module doc)."""
    fn = import_object(text, "--data")
    try:
        got = fn() if callable(fn) else fn
    except Exception as e:  # noqa: BLE001 - the loader's own error, named
        raise ValueError(f"--data {text!r}: the loader raised {type(e).__name__}: {e}") from e
    name = text.partition(":")[2]
    if isinstance(got, data_pkg.Dataset):
        return got
    if isinstance(got, tuple) and len(got) == 2:
        return data_pkg.from_tensors(*got, name=name, seed=seed)
    if isinstance(got, torch.utils.data.Dataset):
        return data_pkg.from_torch(got, name=name, seed=seed)
    raise ValueError(f"--data {text!r} returned {type(got).__name__}; return a commlab.data.Dataset, a "
                     "torch.utils.data.Dataset of (sample, label) pairs, or tensors (x, y)")


def example_input(shape: str, batch: int, vocab: int | None = None) -> torch.Tensor:
    """A batch of ``batch`` samples of ``shape`` ("3x224x224"): standard normal floats, or token
    ids below ``vocab``, from a fixed seed."""
    try:
        dims = tuple(int(d) for d in str(shape).lower().split("x"))
    except ValueError:
        dims = ()
    if not dims or min(dims) < 1:
        raise ValueError(f"--input {shape!r}: one sample's shape as sizes joined by x, e.g. 3x224x224 or 128")
    if not (isinstance(batch, int) and batch >= 1):
        raise ValueError(f"--batch {batch!r} must be an integer >= 1")
    g = torch.Generator().manual_seed(0)
    if vocab is not None:
        if vocab < 1:
            raise ValueError(f"--vocab {vocab} must be >= 1")
        return torch.randint(0, vocab, (batch, *dims), generator=g)
    return torch.randn((batch, *dims), generator=g)


PLAIN_HELP = """Measure one step of your model layer by layer on this machine, print each layer's share of
the step beside its share of the FLOPs, and save the profile as JSON.

A builder is named pkg.module:name (importable from where the command runs): a function that
returns an nn.Module, called with no argument, or with the data set it will train on if it takes
one. The profile keeps the builder's name, so advice on it prints the train command that runs it.
On a CPU each layer is timed with one math thread by default (--threads), by the thread's own CPU
time. Then: simulate --profile my.json [--device v100] and advise --profile my.json."""


def add_parser(sub, fmt) -> None:
    """The ``profile`` subcommand."""
    p = sub.add_parser("profile", help="measure your model's step layer by layer and save the profile",
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

    try:  # the profile can be written, before any measurement
        checks.output_path("--out", a.out, (".json",))
    except (ValueError, TypeError) as e:
        p.error(str(e))
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
    with pd.option_context("display.width", 120):
        print(table.round(4).to_string(index=False))
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
        print(f"furthest from its FLOP share: {worst['layer']} ({worst['measured_share']:.1%} of the step, "
              f"{worst['flops_share']:.1%} of the FLOPs, {worst['measured/flops']:.3g} times its share)")
    free = table[table["flops_share"] == 0]
    if len(free):
        named = [n or "(the model's own parameters)" for n in free["layer"].head(8)]
        print(f"no counted FLOPs (their time is not arithmetic the count sees): {', '.join(named)}"
              + (f" and {len(free) - 8} more" if len(free) > 8 else "")
              + f", {free['measured_share'].sum():.1%} of the step")
    print(f"wrote {a.out}")
    return 0


def provenance(profile, source: str, first=None, net: str | None = None) -> list[str]:
    """What of the advice on ``profile`` (read from ``source``) is measured and what is modelled,
    and, for a profile of a builder, the ``train`` command that runs the ranking's ``first`` row on
    ``net`` with the profile's compute (its data: the loader the profile recorded, else a
    placeholder to replace, said so)."""
    about = profile.about
    if "measured" not in about:
        return [f"{source}: a profile from FLOP counts (no measurement recorded in it)"]
    lines = [f"from the measurement ({source}: {about['measured']} on {about['device']}, torch {about['torch']}, "
             f"batch {about['batch']}, input {about['input']}): each layer's forward and backward seconds and "
             "gradient bytes, so the compute and what backward leaves to hide",
             "from the models: each message's time on the links, the schedules' overlap, compression's arithmetic "
             f"(timed on {profile.device.name if profile.device else 'the default device'}) and the convergence "
             "penalties (measured on the book's small problems, commlab.advisor.penalties)"]
    if first is not None and ":" in str(about.get("model", "")):
        data = about.get("data") or "YOUR_LOADER"
        flags = [f"--model {about['model']}", f"--data {data}", f"--workers {first['workers']}"]
        flags += [f'--{k} "{first[k]}"' for k in ("sync", "arch", "compress", "schedule") if first[k] is not None]
        flags += [f"--profile {source}", f"--batch-size {profile.batch}"] + ([f"--net {net}"] if net else [])
        lines.append("to train the first row: python -m commlab train " + " ".join(flags)
                     + ("" if about.get("data") else " (YOUR_LOADER: your pkg.module:loader or a built-in data set; "
                                                     "profile --data records it)"))
    return lines
