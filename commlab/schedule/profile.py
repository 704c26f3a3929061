"""What a schedule sees of a model: its layers, each with forward and backward seconds and gradient bytes.

A **layer** is a module that owns parameters directly (a ``Linear``, a ``Conv2d``, a
``LayerNorm``); parameter-free work (activations, pooling, attention's softmax) is folded into
the layer that follows it in the forward pass, and work after the last layer into the last.
A module whose own forward never runs but whose parameters its parent uses (the ``out_proj``
of ``nn.MultiheadAttention``) belongs to the nearest ancestor that ran.
Lists are indexed by layer in **forward order**; backward visits them from the last to the
first, so layer L-1's gradient is ready first::

    ready(l) = sum_{k >= l} t_b(k)          (from the start of backward)

:func:`model_profile` measures a torch model: it runs one forward pass with a FLOP counter and
forward hooks, attributing the FLOPs counted between two layers' hooks to the later layer, and
charges backward twice its layer's forward (the "training = 3 x forward" convention of
:func:`commlab.models.intensity.flops_per_sample`). ``params[l]`` lists the positions, in
``model.parameters()`` order, of layer l's parameters, so the real executor can find the
gradients a piece of layer l covers.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from torch.utils.flop_counter import FlopCounterMode


def ready_times(backward_s, start: float = 0.0) -> list[float]:
    """When each layer's gradient is ready if backward (``backward_s`` per layer, forward order)
    starts at ``start``: ``start + sum_{k >= l} t_b(k)``."""
    out, t = [0.0] * len(backward_s), start
    for l in reversed(range(len(backward_s))):
        t += backward_s[l]
        out[l] = t
    return out


@dataclass(frozen=True)
class Profile:
    """Per-layer costs of one iteration, in forward order.

    forward_s, backward_s: seconds per layer for one worker's mini-batch of ``batch`` samples;
    grad_bytes: bytes of each layer's gradient (what a worker sends per iteration);
    names: the layers' names; params: positions of each layer's parameters in
    ``model.parameters()`` (empty for a profile not measured from a model);
    itemsize: bytes per gradient element (pieces are cut on element boundaries);
    shapes: each layer's gradient tensors' shapes (what a compressor that works tensor by tensor
    sees; empty: each layer one flat tensor, :meth:`tensor_shapes`); device: what the step was
    timed on (a simulator's device, or None), which a simulator times compression arithmetic on;
    about: where the numbers come from (for a measured profile: the device, torch, the input and
    how it was timed; :mod:`commlab.sim.measured`), carried along and saved with the profile."""

    forward_s: tuple
    backward_s: tuple
    grad_bytes: tuple
    batch: int = 1
    names: tuple = ()
    params: tuple = ()
    itemsize: int = 4
    shapes: tuple = ()
    device: object = field(default=None, compare=False)
    about: Mapping = field(default_factory=dict, compare=False)

    def __post_init__(self):
        n = len(self.grad_bytes)
        for name in ("forward_s", "backward_s", "grad_bytes"):
            values = getattr(self, name)
            object.__setattr__(self, name, tuple(float(v) if name != "grad_bytes" else int(v) for v in values))
            if len(values) != n:
                raise ValueError(f"Profile: {name} has {len(values)} layers, grad_bytes has {n}")
            if any(not v >= 0 for v in getattr(self, name)):
                raise ValueError(f"Profile: {name} must be >= 0 for every layer, got {list(values)}")
        if n == 0:
            raise ValueError("Profile: a model needs at least one layer with parameters")
        if not (isinstance(self.batch, int) and self.batch >= 1):
            raise ValueError(f"Profile: batch must be an integer >= 1, got {self.batch!r}")
        if any(b % self.itemsize for b in self.grad_bytes):
            raise ValueError(f"Profile: every layer's grad_bytes must be a multiple of itemsize={self.itemsize}")
        object.__setattr__(self, "names", tuple(self.names) or tuple(f"layer{l}" for l in range(n)))
        object.__setattr__(self, "params", tuple(tuple(p) for p in self.params))
        shapes = tuple(tuple(tuple(int(d) for d in s) for s in layer) for layer in self.shapes)
        if shapes and (len(shapes) != n or any(sum(math.prod(s) for s in layer) * self.itemsize != b
                                                for layer, b in zip(shapes, self.grad_bytes))):
            raise ValueError("Profile: shapes must list each layer's tensors, holding its grad_bytes / itemsize elements")
        object.__setattr__(self, "shapes", shapes)

    def tensor_shapes(self, layer: int) -> tuple:
        """The shapes of layer ``layer``'s gradient tensors (one flat tensor if none were recorded)."""
        return self.shapes[layer] if self.shapes else ((self.grad_bytes[layer] // self.itemsize,),)

    @property
    def layers(self) -> int:
        """Number of layers L."""
        return len(self.grad_bytes)

    @property
    def total_bytes(self) -> int:
        """Gradient bytes of the whole model (every layer's, summed)."""
        return sum(self.grad_bytes)

    def ready(self) -> list[float]:
        """Seconds after backward starts at which each layer's gradient is ready."""
        return ready_times(self.backward_s)

    def scaled(self, seconds: float) -> "Profile":
        """The same shape with forward + backward summing to ``seconds`` (another device or batch)."""
        total = sum(self.forward_s) + sum(self.backward_s)
        k = seconds / total if total else 0.0
        return dataclasses.replace(self, forward_s=[f * k for f in self.forward_s],
                                   backward_s=[b * k for b in self.backward_s])

    def __repr__(self) -> str:
        return (f"Profile({self.layers} layers, {self.total_bytes / 1e6:.3g} MB of gradients, "
                f"forward {sum(self.forward_s) * 1e3:.3g} ms, backward {sum(self.backward_s) * 1e3:.3g} ms, "
                f"batch {self.batch})")


def layer_holders(model: torch.nn.Module) -> set[str]:
    """{""} when the model itself owns trainable parameters beside its layers (a positional
    embedding on the root module): that layer is placed where the model's forward starts
    (:func:`layer_flops`). Other modules that own parameters and hold layers (BERT's prediction
    head and its bias, MultiheadAttention and its projection) keep their place at their
    forward's end, where the parameters they own are last used."""
    owners = [name for name, m in model.named_modules() if any(p.requires_grad for p in m.parameters(recurse=False))]
    return {""} if "" in owners and len(owners) > 1 else set()


def layer_flops(model: torch.nn.Module, example_input) -> tuple[list[str], list[float], list[list[int]]]:
    """(names, forward FLOPs of the whole example batch, parameter positions) per layer, in forward order.

    A layer is a module that owns trainable parameters. It takes its place where its forward
    finishes, with the work since the previous layer's place; the model itself, when it owns
    parameters beside its layers (a positional embedding), takes its place where its forward
    *starts* (:func:`layer_holders`), with no work of its own (its parameters' gradient still lands
    where backward computes it). A module called twice counts where it is first
    called; the work of its later calls goes to the layer after them."""
    position = {id(p): i for i, p in enumerate(p for p in model.parameters() if p.requires_grad)}
    owners = [(name, m) for name, m in model.named_modules()
              if any(p.requires_grad for p in m.parameters(recurse=False))]
    holders = layer_holders(model)
    order, flops, mark = [], {}, [0.0]
    counter = FlopCounterMode(display=False)

    def after(name):
        def hook(module, args, out=None):
            if name in flops:  # a later call: its work goes to the next layer
                return
            total = counter.get_total_flops()
            order.append(name)
            flops[name] = total - mark[0]
            mark[0] = total
        return hook

    handles = [m.register_forward_pre_hook(after(name)) if name in holders else m.register_forward_hook(after(name))
               for name, m in owners]
    modes = {m: m.training for m in model.modules()}
    model.eval()
    try:
        # grad enabled: with it off, nn.MultiheadAttention and nn.TransformerEncoderLayer take a fused
        # fast path in eval mode that the FLOP counter does not see (attention would count 0 FLOPs)
        with torch.enable_grad(), counter:
            model(**example_input) if isinstance(example_input, Mapping) else model(example_input)
    finally:
        for h in handles:
            h.remove()
        for m, training in modes.items():
            m.training = training
    if not order:
        raise ValueError("the model has no module that owns trainable parameters")
    flops[order[-1]] += counter.get_total_flops() - mark[0]  # work after the last layer
    modules = dict(owners)
    members, unused = {n: [n] for n in order}, []
    for n, _ in owners:  # a module whose forward never runs but whose parameters its parent uses
        if n not in flops:  # (MultiheadAttention's out_proj) belongs to its nearest ancestor that ran
            up = n
            while up and up not in flops:
                up = up.rpartition(".")[0]
            (members[up].append(n) if up in flops else unused.append(n))
    if unused:
        raise ValueError(f"layers {unused} own parameters but never run in forward; a schedule needs every "
                         "gradient to come from backward")
    params, seen = [], set()  # a tied parameter belongs to its first user: backward finishes it last
    for n in order:
        params.append([])
        for p in (p for member in members[n] for p in modules[member].parameters(recurse=False)):
            if p.requires_grad and id(p) not in seen:
                params[-1].append(position[id(p)])
            seen.add(id(p))
    work = [flops[n] for n in order]
    for i in reversed(range(len(order))):  # a layer left with no parameters (all tied) is folded forward
        if not params[i] and len(order) > 1:
            j = i + 1 if i + 1 < len(order) else i - 1
            work[j] += work[i]
            del order[i], params[i], work[i]
    return order, work, params


def model_profile(model: torch.nn.Module, example_input, flops: float = 1e12, seconds: float | None = None
                  ) -> Profile:
    """A :class:`Profile` of ``model`` on the batch ``example_input`` at ``flops`` FLOP/s (or
    scaled so that forward + backward take ``seconds``, a measured step)."""
    names, fwd, params = layer_flops(model, example_input)
    tensors = [p for p in model.parameters() if p.requires_grad]
    nbytes = [sum(tensors[i].numel() * tensors[i].element_size() for i in ps) for ps in params]
    itemsize = tensors[0].element_size()
    prof = Profile([f / flops for f in fwd], [2 * f / flops for f in fwd], nbytes,
                   batch=int(next(iter(example_input.values())).shape[0] if isinstance(example_input, Mapping)
                             else example_input.shape[0]), names=names, params=params, itemsize=itemsize,
                   shapes=[[tuple(tensors[i].shape) for i in ps] for ps in params])
    return prof if seconds is None else prof.scaled(seconds)
