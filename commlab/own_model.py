"""Your own model, named on the command line as ``pkg.module:name``: how ``train``, ``profile``,
``simulate`` and ``advise`` (:mod:`commlab.cli`) take your model, your data and a profile file.

* A **builder** is named ``pkg.module:name`` (the module importable from where the command runs):
  a function returning an ``nn.Module``, called with no argument, or with the
  :class:`commlab.data.Dataset` it will train on if it takes one (:func:`builder`).
* A **loader** is named the same way: a function of no argument returning a
  :class:`commlab.data.Dataset`, a ``torch.utils.data.Dataset`` of (sample, label) pairs, or a
  pair of tensors ``(x, y)`` (:func:`loader`; :func:`commlab.data.from_torch`,
  :func:`commlab.data.from_tensors`).
* :func:`example_input` is the batch ``profile --input 3x224x224 --batch 64`` measures the step
  on (:mod:`commlab.cli.profile`; ``--vocab V`` makes it token ids below V).
* :func:`provenance` says which numbers of the advice on a profile file come from the measurement
  and which from models, and the ``train`` command that runs its first row.
"""
from __future__ import annotations

import importlib
import inspect
import shlex

import torch

from . import data as data_pkg


def import_object(text: str, flag: str):
    """The object named ``pkg.module:name``; a clear error for a name that is not one."""
    module, _, name = str(text).partition(":")
    if not module or not name:
        raise ValueError(f"{flag} {text!r}: name it as pkg.module:function")
    try:
        found = importlib.import_module(module)
    except ImportError as e:
        raise ValueError(f"{flag} {text!r}: cannot import {module!r} ({e}); run from the folder that holds it") from e
    except Exception as e:  # noqa: BLE001 - the module's own error while it is imported, named
        raise ValueError(f"{flag} {text!r}: importing {module!r} raised {type(e).__name__}: {e}") from e
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


def provenance(profile, source: str, first=None, net: str | None = None, device: str | None = None) -> list[str]:
    """What of the advice on ``profile`` (read from ``source``) is measured and what is modelled,
    and, for a profile of a builder, the ``train`` command that runs the ranking's ``first`` row on
    ``net`` with the profile's compute, mapped to ``device`` when the advice mapped it there (its
    data: the loader the profile recorded, else a placeholder to replace, said in the line before).
    The command is the last line, whole after ``"to train the first row: "``, so that it can be
    printed unwrapped and run as it is."""
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
        flags += [f"--profile {shlex.quote(str(source))}", f"--batch-size {profile.batch}"]
        flags += ([f"--net {shlex.quote(net)}"] if net else []) + ([f"--device {device}"] if device else [])
        if not about.get("data"):
            lines.append("in the command below, replace YOUR_LOADER by your pkg.module:loader or a built-in data "
                         "set (profile --data records it)")
        lines.append("to train the first row: python -m commlab train " + " ".join(flags))
    return lines
