"""A profile as a small JSON file, so a profile measured on a GPU server is simulated on a laptop.

The file holds what the simulator and the advisor read (per layer, in forward order: name,
forward and backward seconds, gradient bytes and tensor shapes; the batch; bytes per element),
the simulator's device the step was timed on (by its name in :data:`commlab.sim.DEVICES`, or
null), and ``about``: where the numbers come from (:func:`commlab.sim.measured.measure` writes the
device, torch's version, the input's shape, how it was timed and the whole step's median).
``format`` and ``version`` let a reader refuse a file it does not know. Writing is atomic: a
temporary file beside the target, then a rename.

:func:`resolve` is how a function that takes a built-in model name takes a profile file too.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..files import write_atomic
from ..schedule.profile import Profile
from .devices import BUILTINS, DEVICES, builtin

FORMAT, VERSION = "commlab-profile", 1


def save_profile(profile: Profile, path) -> Path:
    """Write ``profile`` to ``path`` (a ``.json`` file); returns the path."""
    if not isinstance(profile, Profile):
        raise ValueError(f"save_profile: expected a Profile, got {type(profile).__name__}")
    path = Path(path)
    if path.suffix.lower() != ".json":
        raise ValueError(f"save_profile: {str(path)!r} must end in .json")
    device = next((k for k, d in DEVICES.items() if d is profile.device), None)
    doc = {"format": FORMAT, "version": VERSION, "batch": profile.batch, "itemsize": profile.itemsize,
           "device": device, "about": dict(profile.about),
           "layers": [{"name": profile.names[l], "forward_s": profile.forward_s[l],
                       "backward_s": profile.backward_s[l], "grad_bytes": profile.grad_bytes[l],
                       "shapes": [list(s) for s in profile.tensor_shapes(l)],
                       "params": list(profile.params[l]) if profile.params else []}
                      for l in range(profile.layers)]}
    return write_atomic(path, json.dumps(doc, indent=1))


def load_profile(path) -> Profile:
    """The :class:`Profile` saved in ``path`` by :func:`save_profile`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no profile file {str(path)!r}")
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not a profile file: not JSON ({e})") from e
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{path} is not a profile file (no \"format\": {FORMAT!r}); write one with "
                         "commlab.sim.save_profile or python -m commlab profile")
    if doc.get("version") != VERSION:
        raise ValueError(f"{path}: profile file version {doc.get('version')!r}; this commlab reads version {VERSION}")
    _check(doc, path)
    layers = doc["layers"]
    params = [layer.get("params", []) for layer in layers]
    return Profile([layer["forward_s"] for layer in layers], [layer["backward_s"] for layer in layers],
                   [layer["grad_bytes"] for layer in layers], batch=doc["batch"],
                   names=[layer["name"] for layer in layers], params=params if all(params) else (),
                   itemsize=doc["itemsize"], shapes=[layer["shapes"] for layer in layers],
                   device=DEVICES.get(doc.get("device")), about=doc.get("about", {}))


def _check(doc: dict, path) -> None:
    """Refuse a profile file whose fields are missing or of the wrong kind, naming the field."""
    for key, kind in (("layers", list), ("batch", int), ("itemsize", int)):
        if not isinstance(doc.get(key), kind) or isinstance(doc.get(key), bool) or not doc.get(key):
            raise ValueError(f"{path}: {key!r} must be {'a non-empty list of layers' if kind is list else 'an integer >= 1'}"
                             f", got {doc.get(key)!r}")
    if doc.get("device") is not None and doc["device"] not in DEVICES:
        raise ValueError(f"{path}: device {doc['device']!r} is not a simulator device; valid: {', '.join(DEVICES)} "
                         "or null")
    for l, layer in enumerate(doc["layers"]):
        if not isinstance(layer, dict):
            raise ValueError(f"{path}: layer {l} must be an object with name, forward_s, backward_s, grad_bytes")
        for key in ("forward_s", "backward_s", "grad_bytes"):
            value = layer.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{path}: layer {l} ({layer.get('name', '?')!r}): {key} must be "
                                 f"{'bytes' if key == 'grad_bytes' else 'seconds'}, a number >= 0, got {value!r}")


def resolve(spec) -> Profile:
    """A Profile from itself, a built-in name (:data:`commlab.sim.BUILTINS`) or a profile file."""
    if isinstance(spec, Profile):
        return spec
    if isinstance(spec, str) and spec in BUILTINS:
        return builtin(spec)
    if isinstance(spec, (str, os.PathLike)) and str(spec).lower().endswith(".json"):
        return load_profile(spec)
    raise ValueError(f"unknown model {spec!r}; valid: {', '.join(BUILTINS)}, a profile file (.json) or a Profile")
