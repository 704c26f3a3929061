"""A measured profile put on another device, operator by operator, by a roofline.

A profile measured on this laptop's CPU says how the step splits over layers *on that CPU*; a
GPU runs the same operators at other rates, so the CPU's seconds cannot be reused as a GPU's
(a CPU's convolution is compute-bound where a GPU's BatchNorm, pooling and softmax are bound by
memory, and small operators by the launch of their kernel). :func:`to_device` keeps what the
measurement found (the layers, their gradients, and what each operator did,
:mod:`commlab.sim.op_trace`) and replaces the seconds: operator o of a layer takes

    t_o = max(F_o / R_kind, B_o / (e x W), t_launch)

F_o its FLOPs and B_o the bytes it reads and writes; R_kind the device's dense rate for that kind
of operator in PyTorch's default fp32 training (a convolution, another matrix product; :data:`RATES`,
from data sheets); W the memory bandwidth, e the fraction a streaming kernel reaches and
t_launch one eager operator's launch (the :class:`~commlab.sim.devices.Device`'s own, stated
there: 0.85 and 8 us on every GPU). A layer's forward and backward are the sums over their
operators. A roofline is a floor: kernels that reach less than the data sheet's peak (small
matrices, cuDNN's choice of algorithm), memory traffic beyond an operator's inputs and outputs,
and the host's time between operators when they are not tiny make the real step longer; a
mapped profile says so in its ``about``.

**Rates** (dense, per second). PyTorch trains an fp32 model on Ampere and later GPUs with its
convolutions on TF32 tensor cores (``torch.backends.cudnn.allow_tf32`` is True by default) and
its other matrix products in plain FP32 (``torch.backends.cuda.matmul.allow_tf32`` is False by
default since PyTorch 1.12); Volta and Turing have no TF32, so both run at FP32. Data sheets:
V100 SXM2 15.7 TFLOP/s FP32; RTX 2080 Ti 13.4 FP32; A100 SXM 19.5 FP32 and 156 TF32; H100 and
H200 SXM 66.9 FP32 and 494.7 TF32 (the dense halves of the sparse figures NVIDIA quotes).
"""
from __future__ import annotations

import dataclasses

from ..schedule.profile import Profile
from .devices import DEVICES, Device, get_device
from .op_trace import CONV

RATES = {  # device -> (matrix products other than convolutions, convolutions), FLOP/s; module doc
    "v100": (15.7e12, 15.7e12),
    "rtx2080ti": (13.4e12, 13.4e12),
    "a100": (19.5e12, 156e12),
    "h100": (66.9e12, 494.7e12),
    "h200": (66.9e12, 494.7e12),
    "cpu": (DEVICES["cpu"].flops, DEVICES["cpu"].flops),
}


MEMORY_GB = {"v100": 32, "rtx2080ti": 11, "a100": 80, "h100": 80, "h200": 141}  # data sheets (the larger V100)


def operator_seconds(op, device: Device) -> float:
    """One operator's (flops, bytes, kind) on ``device``: the larger of its arithmetic, its memory
    traffic and one kernel launch."""
    flops, moved, kind = op
    matmul, conv = RATES[device.name]
    rate = conv if kind == CONV else matmul
    return max(flops / rate, moved / (device.efficiency * device.memory_bandwidth), device.launch)


def to_device(profile: Profile, device) -> Profile:
    """``profile`` (measured by :func:`commlab.sim.measure`, which records each operator) with
    every layer's forward and backward seconds those of ``device`` (a name of :data:`RATES` or
    a :class:`~commlab.sim.devices.Device` of that name), by this module's roofline."""
    dev = get_device(device)
    ops = profile.about.get("ops")
    if not ops:
        raise ValueError("to_device needs a profile measured by commlab.sim.measure (or `python -m "
                         "commlab profile`), which records what each layer's operators do; this one "
                         "has no 'ops'")
    if dev.name not in RATES:
        raise ValueError(f"to_device: no data-sheet rates for device {dev.name!r}; "
                         f"valid: {', '.join(RATES)}")
    seconds = {phase: [sum(operator_seconds(op, dev) for op in layer) for layer in layers]
               for phase, layers in ops.items()}
    matmul, conv = RATES[dev.name]
    by = (f"a roofline per operator: convolutions at {conv / 1e12:g} TFLOP/s, other matrix "
          f"products at {matmul / 1e12:g} TFLOP/s, bytes at {dev.efficiency:g} x "
          f"{dev.memory_bandwidth / 1e9:g} GB/s, at least {dev.launch * 1e6:g} us an operator "
          "(data sheets; a floor: real kernels reach less)")
    mapped = {"from": profile.about.get("device", "unknown"), "to": dev.name, "by": by}
    return dataclasses.replace(profile, forward_s=tuple(seconds["forward"]),
                               backward_s=tuple(seconds["backward"]), device=dev,
                               about={**profile.about, "mapped": mapped})


def describe(profile: Profile) -> str:
    """Where a profile's seconds come from, in one line: measured on what, and mapped how."""
    about = profile.about
    if "mapped" in about:
        m = about["mapped"]
        return f"measured on {m['from']}, mapped to {m['to']} by {m['by']}"
    if about.get("device"):
        return f"measured on {about['device']} ({about.get('measured', 'per layer')})"
    name = getattr(profile.device, "name", None)
    return f"modelled from FLOPs on {name}" if name else "given"
