"""A measured profile: each layer's forward and backward seconds, timed on the device at hand.

:func:`commlab.sim.profile` counts a model's FLOPs and charges backward twice forward; that is
a model of the step. :func:`measure` times the step itself, layer by layer (lighter than
Daydream, Zhu et al., ATC 2020, which maps a CUPTI kernel trace to layers, and dPRO, Hu et al.,
MLSys 2022, which profiles the distributed run into a global data-flow graph):

* **Layers** are those of :class:`~commlab.schedule.profile.Profile` (modules that own
  parameters, in forward order, parameter-free work folded into the next layer), found by
  :func:`~commlab.schedule.profile.layer_flops`, with the same gradient bytes and shapes: the
  model's own parameters (a positional embedding on the root module) are a layer placed where
  the model's forward starts, a module called twice counts where it is first called, a tied
  parameter with its first user.
* **Forward**: a forward hook stamps the clock as each layer finishes; layer l's forward time is
  the stamp of l minus the stamp of l-1 (the step's start for the first), so the activations
  between two layers count toward the later one; the loss counts toward the last layer.
* **Backward**: a post-accumulate-grad hook on every parameter stamps the clock as its gradient
  lands; layer l is ready when its last parameter is. Backward visits the layers from the last to
  the first, so t_b(l) = ready(l) - ready(l+1) (ready(L) = the start of backward), with ready
  made monotone (a layer can only be ready when every later one is); what autograd does after
  layer 0 is ready counts toward layer 0. So ``ready(l) = sum_{k >= l} t_b(k)`` holds as the
  simulator reads it.
* **Clock**: on a GPU, CUDA events recorded on the current stream at each stamp, read after one
  synchronization per step (a host clock would time the kernel launches, not the kernels). On a
  CPU with one math thread, the thread's CPU time (``time.thread_time``): other processes do not
  lengthen it, where the wall clock of a step on a busy 2-core machine swung by 2x; with several
  math threads, the wall clock (``time.perf_counter``), and the machine should be quiet.
* Each number is the **median** over ``steps`` steps after ``warmup`` steps. Each hooked step is
  followed by the same step without hooks, whose median is ``about["step_s"]`` and whose fastest
  and slowest are ``about["step_range_s"]`` (interleaved, so
  that both see the same machine); the per-layer times add up to it within the hooks' overhead
  (the test holds them within 25% on two models on this CPU, one thread; measured beside two busy
  processes on 2 cores: 0.89 to 1.06).

``about["memory"]`` is what the step holds (:func:`~commlab.sim.step_memory.step_memory`);
``about["ops"]`` what each layer's operators do (:func:`~commlab.sim.op_trace.trace_ops`), which
:func:`~commlab.sim.to_device.to_device` maps to another device.

Cost: warmup + 2 steps forward and backward of the model, and one forward pass to find the layers.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Mapping

import torch

from ..models.intensity import floating_tensors
from ..schedule.profile import Profile, layer_flops, layer_holders
from .devices import DEVICES
from .op_trace import trace_ops
from .step_memory import step_memory

# a CUDA device's name -> the simulator's device of that kind (compression arithmetic is timed on it)
_GPU_NAMES = (("H200", "h200"), ("H100", "h100"), ("A100", "a100"), ("V100", "v100"), ("2080 Ti", "rtx2080ti"))


def _default_loss(out) -> torch.Tensor:
    """The sum of the means of the model's floating-point outputs: every head of a model with
    several (BERT's pre-training has two) gets a gradient, as the FLOP count assumes."""
    tensors = floating_tensors(out)
    if not tensors:
        raise ValueError(f"the model returned {type(out).__name__} with no floating-point tensor; give loss= "
                         "(output -> scalar tensor)")
    return sum(t.float().mean() for t in tensors)


def _move(x, device):
    if isinstance(x, Mapping):
        return {k: v.to(device) for k, v in x.items()}
    return x.to(device)


def _shape(x) -> str:
    if isinstance(x, Mapping):
        return ", ".join(f"{k}: {tuple(v.shape)}" for k, v in x.items())
    return str(tuple(x.shape))


class _Clock:
    """Stamps read as seconds: CUDA events on the current stream; on a CPU with one math thread,
    the thread's own CPU time (other processes on the machine do not lengthen it); with several,
    wall time (the other threads' work is not this thread's CPU time)."""

    def __init__(self, cuda: bool):
        self.cuda, self.marks = cuda, []
        self.read = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter
        self.kind = "CUDA events" if cuda else "thread CPU time" if self.read is time.thread_time else "wall time"

    def stamp(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.marks.append(event)
        else:
            self.marks.append(self.read())
        return len(self.marks) - 1

    def seconds(self) -> list[float]:
        if not self.cuda:
            return [m - self.marks[0] for m in self.marks]
        torch.cuda.synchronize()
        return [self.marks[0].elapsed_time(m) / 1e3 for m in self.marks]


def measure(model: torch.nn.Module, example_input, device=None, loss=None, warmup: int = 2,
            steps: int = 5) -> Profile:
    """The measured :class:`Profile` of one step of ``model`` on the batch ``example_input``.

    device: where to run it ("cpu", "cuda", a torch.device; default: where the model's parameters
    are); model and input are moved there. loss: output -> scalar tensor (default: the output's
    mean). The profile's ``about`` says what was measured, on what, with which torch."""
    params, device = _check(model, device, warmup, steps)
    model.to(device)
    x = _move(example_input, device)
    loss = loss or _default_loss
    call = (lambda: model(**x)) if isinstance(x, Mapping) else (lambda: model(x))
    try:
        names, flops, positions = layer_flops(model, x)
        memory = step_memory(model, call, loss, params)  # a failing step fails here, before any timing
        ops = trace_ops(model, call, loss, names, positions, params)
    except ValueError:
        raise
    except Exception as e:  # noqa: BLE001 - the step's own error, named with the input it got
        raise ValueError(f"measure: one step of the model failed on an input of shape "
                         f"{_shape(x)}: {type(e).__name__}: {e}") from e
    cuda = device.type == "cuda"
    forward, backward, whole = _timed_steps(model, call, loss, names, positions, params, cuda,
                                            warmup, steps)
    layers = [[params[i] for i in ps] for ps in positions]
    batch = int(next(iter(x.values())).shape[0] if isinstance(x, Mapping) else x.shape[0])
    gpu = torch.cuda.get_device_name(device) if cuda else None
    threads = torch.get_num_threads()
    about = {"measured": f"{_Clock(cuda).kind} per layer", "torch": torch.__version__,
             "device": gpu or f"cpu ({threads} thread{'s' if threads > 1 else ''})",
             "batch": batch, "input": _shape(x), "model": type(model).__name__, "steps": steps,
             "warmup": warmup, "step_s": statistics.median(whole), "step_range_s": [min(whole), max(whole)],
             "flops": [float(f) for f in flops], "memory": memory, "ops": ops}
    grads = [sum(p.numel() * p.element_size() for p in ps) for ps in layers]
    return Profile(forward, backward, grads,
                   batch=batch, names=names, params=positions, itemsize=params[0].element_size(),
                   shapes=[[tuple(p.shape) for p in ps] for ps in layers], device=_sim_device(gpu),
                   about=about)


def _check(model, device, warmup, steps):
    """(the trainable parameters, the device to run on), or the reason there are none."""
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"measure: model must be an nn.Module, got {type(model).__name__}")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("measure: the model has no trainable parameters: no gradient to time or to send")
    for name, value, least in (("warmup", warmup, 0), ("steps", steps, 1)):
        if not (isinstance(value, int) and value >= least):
            raise ValueError(f"measure: {name}={value!r} must be an integer >= {least}")
    device = torch.device(device) if device is not None else params[0].device
    if device.type == "meta":
        raise ValueError("measure: the model is on the meta device (shapes, no data): nothing runs there to "
                         "time; build it on a real one, or give device='cpu' or 'cuda'")
    return params, device


def _sim_device(gpu: str | None):
    """The simulator's device for a CUDA device's name (None if it has none), or its CPU."""
    if gpu is None:
        return DEVICES["cpu"]
    return next((DEVICES[d] for key, d in _GPU_NAMES if key in gpu), None)


def _timed_steps(model, call, loss, names, positions, params, cuda, warmup, steps):
    """(per-layer forward medians, per-layer backward medians, the unhooked step's seconds). Each
    round runs one step with the hooks and one without, so both see the same machine."""
    modules = dict(model.named_modules())
    holders = layer_holders(model)
    L = len(names)
    state = {}

    def forward_hook(l):
        def hook(module, args, out=None):
            state["calls"][l] += 1
            if state["calls"][l] == 1:  # a module called again: the later calls' time goes to the next layer
                state["forward"][l] = state["clock"].stamp()
        return hook

    def grad_hook(l):
        def hook(param):
            state["grads"][l].append(state["clock"].stamp())
        return hook

    fwd, bwd, whole, handles = [[] for _ in range(L)], [[] for _ in range(L)], [], []
    try:
        for step in range(warmup + steps):
            handles = [modules[n].register_forward_pre_hook(forward_hook(l)) if n in holders
                       else modules[n].register_forward_hook(forward_hook(l)) for l, n in enumerate(names)]
            handles += [params[i].register_post_accumulate_grad_hook(grad_hook(l))
                        for l, ps in enumerate(positions) for i in ps]
            model.zero_grad(set_to_none=True)
            clock = _Clock(cuda)
            state.update(clock=clock, calls=[0] * L, forward=[None] * L, grads=[[] for _ in range(L)])
            start = clock.stamp()
            out = loss(call())
            forward_end = clock.stamp()
            out.backward()
            backward_end = clock.stamp()
            for h in handles:
                h.remove()
            silent = [names[l] for l in range(L) if len(state["grads"][l]) < len(positions[l])]
            if silent:
                raise ValueError(f"measure: layer {silent[0]!r} gets no gradient from the loss (the loss does not "
                                 "depend on it): give loss= a function of every output you train, or freeze its "
                                 "parameters (requires_grad=False)")
            t = clock.seconds()
            model.zero_grad(set_to_none=True)  # the same step without hooks: what the layers should add up to
            plain = _Clock(cuda)
            begin = plain.stamp()
            loss(call()).backward()
            end = plain.stamp()
            if step < warmup:
                continue
            whole.append(plain.seconds()[end] - plain.seconds()[begin])
            marks = [t[start]] + [t[state["forward"][l]] for l in range(L)]
            for l in range(L):
                fwd[l].append(marks[l + 1] - marks[l] + (t[forward_end] - marks[L] if l == L - 1 else 0.0))
            ready, later = [0.0] * L, t[forward_end]
            for l in reversed(range(L)):
                later = max(later, max(t[i] for i in state["grads"][l]))
                ready[l] = later
            for l in range(L):
                after = ready[l + 1] if l + 1 < L else t[forward_end]
                bwd[l].append(ready[l] - after + (t[backward_end] - ready[0] if l == 0 else 0.0))
    finally:
        for h in handles:
            h.remove()
        model.zero_grad(set_to_none=True)
    return [statistics.median(v) for v in fwd], [statistics.median(v) for v in bwd], whole


def versus_flops(profile: Profile, flops: float | None = None):
    """Each layer's share of a measured step beside its share of the FLOPs (the model
    :func:`commlab.sim.profile` makes: backward twice forward, so a layer's share of the step is
    its share of the forward FLOPs), and the step the FLOP count predicts at ``flops`` FLOP/s
    (default: the profile's simulator device). A DataFrame by layer; ``attrs`` holds the totals."""
    import pandas as pd

    counted = profile.about.get("flops")
    if not counted or len(counted) != profile.layers:
        raise ValueError("versus_flops needs a measured profile (commlab.sim.measure): its about has each layer's FLOPs")
    rate = flops or (profile.device.flops if profile.device is not None else None)
    step = [f + b for f, b in zip(profile.forward_s, profile.backward_s)]
    total, work = sum(step), sum(counted)
    table = pd.DataFrame({"layer": profile.names, "forward_ms": [f * 1e3 for f in profile.forward_s],
                          "backward_ms": [b * 1e3 for b in profile.backward_s],
                          "measured_share": [s / total for s in step],
                          "flops_share": [f / work for f in counted],
                          "grad_MB": [b / 1e6 for b in profile.grad_bytes]})
    table["measured/flops"] = table["measured_share"] / table["flops_share"].where(table["flops_share"] > 0)
    table.attrs.update(measured_s=total, step_s=profile.about.get("step_s"),
                       flops_s=3 * work / rate if rate else None, flops_rate=rate)
    return table
