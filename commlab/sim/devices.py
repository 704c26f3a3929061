"""Per-layer profiles of models on named devices, calibrated on single-GPU throughput only.

A profile's **shape** (how the time of one step splits over layers, forward and backward) comes
from FLOPs: :func:`commlab.schedule.profile.model_profile` counts each layer's forward FLOPs on
the meta device and charges backward twice that. Its **scale** comes from the device:

* a calibration, ``{model name: (batch, samples per second on one GPU)}``: forward + backward of
  one step take ``batch / throughput`` seconds (:meth:`Profile.scaled`). The built-ins are the
  single-GPU throughputs of the quantitative survey (Shi et al., IEEE Network 2021; the table in
  HKBU-HPML/ddl-benchmarks, results/2020-05-29) on an Nvidia RTX 2080 Ti: ResNet-50 at batch 64,
  253.1 samples/s; BERT-Base at batch 64 and 64 tokens, 212.8; BERT-Large at batch 8 and 64
  tokens, 49. Nothing multi-GPU enters: what the simulator predicts for 4 to 32 GPUs can then
  be held against what the survey measured.
* otherwise a sustained FLOP rate: seconds = FLOPs / ``flops``. For the RTX 2080 Ti we take
  6.5 TFLOP/s, about half its 13.4 TFLOP/s FP32 peak: the rate our FLOP count (matrix products
  only, see :func:`commlab.models.intensity.flops_per_sample`) gives for its calibrated runs
  (ResNet-50 6.2, BERT-Base 9.0, BERT-Large 6.4 TFLOP/s).

:func:`builtin` builds and caches the survey's three profiles (building a meta model takes a
second or two, so nothing is built at import); :data:`PROFILES` reads them lazily by name.

**Compression arithmetic on a device.** A compressor declares what its encode and decode do as
:class:`~commlab.compress.cost.KernelWork`: memory passes over the tensor, kernel launches, a selection,
host round trips. A device turns that into seconds (:meth:`Device.work_seconds`)::

    t = launches x launch + syncs x sync + (passes x 4 d + select x 4 x select_passes) / (efficiency x memory_bandwidth)
        + flops / flops_rate + host x 4 d / host_bandwidth

from its data sheet's memory bandwidth (the arithmetic of compressors is streaming, far below any
GPU's FLOP rate per byte) and three constants that no data sheet gives, stated once for every
GPU: ``efficiency`` 0.85, what a streaming kernel reaches of the peak (STREAM-like triads reach
85-90% on V100, A100 and H100); ``launch`` 16.1 us, the cost of one eager PyTorch operator on a
GPU (Python, the dispatcher and the kernel launch; the kernels of small tensors finish sooner than
the host can issue them), and ``sync`` 26.3 us, a host round trip (a ``.item()``) that drains the
queue, both the least-squares fit of this library's compressors measured on an H200 at 4,096
values, where launches and round trips are nearly all of a call (``benchmarks/measured/
h200_compress_costs.json``, less the declared memory, FLOP and selection time; the test of this
module solves it again); ``select_passes`` 16, the passes over 32-bit keys of ``torch.topk``'s radix select (2 bits a
pass); ``host_bandwidth`` 10 GB/s, one host core copying memory (as :mod:`commlab.net.protocols`
assumes), which times the entropy codes that run on the host by design. ``pcie`` is the GPU's
host link per direction (:data:`PCIE`: 3.0 for the RTX 2080 Ti and the V100, 4.0 for the A100,
5.0 for the H100 and H200), which a collective staged through host memory crosses
(:mod:`commlab.sim.data_path`). The ``"cpu"`` device is this project's laptop-class CPU on one thread, measured here with
torch (a streaming op, a tiny op, a top-k), so the model is checked where it can be measured.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from .. import checks
from ..net.protocols import COPY_RATE
from ..schedule.profile import Profile, model_profile

SEQ_LEN = 64  # the survey's BERT sentence length
# A x16 slot's rate per direction after line coding (128b/130b since PCIe 3.0), bytes/s: 3.0 at
# 8 GT/s, 4.0 at 16, 5.0 at 32 (PCI-SIG); the GPU's host link, which staged collectives cross
PCIE = {3: 15.75e9, 4: 31.5e9, 5: 63.0e9}
LAUNCH, SYNC = 16.1e-6, 26.3e-6  # seconds per eager operator and per host round trip on a GPU (module doc)


@dataclass(frozen=True)
class Device:
    """A GPU: a sustained FLOP rate, per model name a measured (batch, samples/s), and what times
    compression arithmetic on it (module doc): memory bandwidth (bytes/s, the data sheet's peak),
    the fraction of it a streaming kernel reaches, seconds per kernel launch and per host round
    trip, and the passes a top-k selection makes over its keys."""

    name: str
    flops: float
    calibration: dict = field(default_factory=dict)
    memory_bandwidth: float = 900e9
    efficiency: float = 0.85
    launch: float = LAUNCH
    sync: float = SYNC
    select_passes: float = 16.0
    host_bandwidth: float = COPY_RATE  # bytes/s one host core copies
    pcie: float = PCIE[3]  # bytes/s per direction between the GPU and host memory (data sheet)

    def __post_init__(self):
        if not (isinstance(self.flops, (int, float)) and self.flops > 0):
            raise ValueError(f"Device {self.name!r}: flops must be a FLOP/s rate > 0, got {self.flops!r}")
        positive = ("memory_bandwidth", "efficiency", "host_bandwidth", "pcie")
        for what in (*positive, "launch", "sync", "select_passes"):
            value = getattr(self, what)
            if not (checks.is_number(value) and value >= 0) or (what in positive and not value > 0):
                raise ValueError(f"Device {self.name!r}: {what}={value!r} must be a number "
                                 f"{'> 0' if what in positive else '>= 0'}")

    def work_seconds(self, work, numel: int) -> float:
        """Seconds of :class:`~commlab.compress.cost.KernelWork` on a tensor of ``numel`` elements (module doc)."""
        moved = 4.0 * (work.passes * numel + work.select * self.select_passes)
        return (work.launches * self.launch + work.syncs * self.sync + moved / (self.efficiency * self.memory_bandwidth)
                + work.flops / self.flops + 4.0 * work.host * numel / self.host_bandwidth)

    def seconds(self, name, batch: int):
        """Measured seconds of one step of model ``name`` at ``batch``, or None."""
        cal = self.calibration.get(name)
        return None if cal is None or cal[0] != batch else batch / cal[1]


DEVICES: dict[str, Device] = {
    # NVIDIA GeForce RTX 2080 Ti: 13.4 TFLOP/s FP32 peak, 616 GB/s GDDR6 (352-bit, 14 Gb/s)
    "rtx2080ti": Device("rtx2080ti", 6.5e12, {"resnet50": (64, 253.1), "bert-base": (64, 212.8),
                                              "bert-large": (8, 49.0)}, memory_bandwidth=616e9),
    # NVIDIA Tesla V100 SXM2 datasheet: 15.7 TFLOP/s FP32, 900 GB/s HBM2; sustained FLOPs at the
    # 2080 Ti's fraction of its FP32 peak (6.5 of 13.4); no measured step times
    "v100": Device("v100", 15.7e12 * 6.5 / 13.4, memory_bandwidth=900e9),
    # NVIDIA A100 (40 GB SXM) datasheet: 312 TFLOP/s dense bf16/fp16 tensor-core peak, 1,555 GB/s HBM2
    "a100": Device("a100", 312e12, memory_bandwidth=1555e9, pcie=PCIE[4]),
    # NVIDIA H100 SXM datasheet: 989 TFLOP/s dense bf16 tensor-core peak, 3.35 TB/s HBM3
    "h100": Device("h100", 989e12, memory_bandwidth=3.35e12, pcie=PCIE[5]),
    # NVIDIA H200 datasheet: the H100's compute, 4.8 TB/s HBM3e (the GPU this project was lent)
    "h200": Device("h200", 989e12, memory_bandwidth=4.8e12, pcie=PCIE[5]),
    # this project's 2-core CPU on one torch thread, measured with torch 2.13: 156 GFLOP/s in a
    # 1024^2 matmul; 25-44 GB/s in streaming ops into a tensor that exists, but 8-13 GB/s into a
    # fresh one (a multiply, a sign, a floor, a cast of 4M values: the new pages are faulted in),
    # as a compressor's outputs are: 10 GB/s taken, efficiency 1; 1.4 us per operator on a tiny
    # tensor, 4 us more for a host read of a result; our top-k on a CPU compares every entry
    # against a sampled threshold and selects among the few that pass (about 2 passes). Random
    # draws run at 0.6 GB/s here, far below memory speed, which the model does not see.
    "cpu": Device("cpu", 156e9, memory_bandwidth=10e9, efficiency=1.0, launch=1.4e-6, sync=4e-6, select_passes=2.0,
                  host_bandwidth=10e9, pcie=float("inf")),  # its tensors are in host memory already
}
BUILTINS = ("resnet50", "bert-base", "bert-large")


def get_device(spec) -> Device:
    """A Device from itself, a name of :data:`DEVICES`, or a FLOP/s rate."""
    if isinstance(spec, Device):
        return spec
    if isinstance(spec, str) and spec.lower().replace(" ", "").replace("-", "") in DEVICES:
        return DEVICES[spec.lower().replace(" ", "").replace("-", "")]
    if checks.is_number(spec) and spec > 0:
        return Device(f"{spec:.3g} FLOP/s", float(spec))
    raise ValueError(f"unknown device {spec!r}; valid: {', '.join(DEVICES)}, a Device(name, flops, calibration) "
                     "or a FLOP/s rate > 0")


def _standard_input(name: str, batch: int, seq_len: int):
    from ..models import MODELS

    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; valid names: {', '.join(MODELS)} (or an nn.Module "
                         "with example_input=)")
    model, x, _ = MODELS[name].standard(seq_len)
    grow = lambda t: torch.zeros((batch, *t.shape[1:]), dtype=t.dtype, device=t.device)  # noqa: E731
    return model, ({k: grow(v) for k, v in x.items()} if isinstance(x, Mapping) else grow(x))


def profile(model, batch: int | None = None, device="rtx2080ti", seq_len: int = SEQ_LEN,
            example_input=None) -> Profile:
    """The per-layer :class:`Profile` of one worker's step on ``device``.

    model: a name of :data:`commlab.models.MODELS` (its standard input, ``seq_len`` tokens for
    BERT, grown to ``batch`` samples; ``batch`` defaults to the device's calibrated batch), or an
    ``nn.Module`` with ``example_input`` (a batched tensor or dict; build it on ``meta`` to
    count without memory). device: see :func:`get_device`."""
    dev = get_device(device)
    if isinstance(model, str):
        from ..models import MODELS

        if model not in MODELS:  # the name first: a calibrated batch is only asked of a known model
            raise ValueError(f"profile: unknown model {model!r}; valid names: {', '.join(MODELS)} (or an nn.Module "
                             "with example_input=)")
        if batch is None:
            batch = dev.calibration.get(model, (None,))[0]
            if batch is None:
                raise ValueError(f"{dev.name} has no calibrated batch for {model!r}: give batch=")
        checks.integer("batch", batch, got=True)
        name = model
        model, example_input = _standard_input(model, batch, seq_len)
    elif isinstance(model, torch.nn.Module):
        if example_input is None:
            raise ValueError("an nn.Module needs example_input= (a batched tensor or dict of tensors)")
        name = None
    else:
        raise ValueError(f"model must be a model name or an nn.Module, got {model!r}")
    prof = model_profile(model, example_input, flops=dev.flops)
    if batch is not None and prof.batch != batch:
        raise ValueError(f"batch={batch} but example_input holds {prof.batch} samples")
    seconds = dev.seconds(name, prof.batch) if name is not None else None
    prof = dataclasses.replace(prof, device=dev)
    return prof if seconds is None else prof.scaled(seconds)


@functools.lru_cache(maxsize=None)
def builtin(name: str) -> Profile:
    """The survey's profiles on the RTX 2080 Ti (cached): "resnet50" (batch 64), "bert-base"
    (batch 64, 64 tokens), "bert-large" (batch 8, 64 tokens)."""
    if name not in BUILTINS:
        raise ValueError(f"unknown built-in profile {name!r}; valid: {', '.join(BUILTINS)}")
    return profile(name, device="rtx2080ti")


class _Profiles(Mapping):
    """The built-in profiles by name, each built on first use."""

    def __getitem__(self, name: str) -> Profile:
        if name not in BUILTINS:
            raise KeyError(name)
        return builtin(name)

    def __iter__(self):
        return iter(BUILTINS)

    def __len__(self) -> int:
        return len(BUILTINS)

    def __repr__(self) -> str:
        return f"PROFILES({', '.join(BUILTINS)}; built on first use)"


PROFILES = _Profiles()
