"""What a framework adds to every message: the cost of launching one collective, beyond its bytes.

A link's alpha-beta line times the wire; the frameworks that run the survey's methods add their
own cost per operation: Horovod negotiates each tensor among all ranks in its background loop
and launches an NCCL kernel for it; BytePS runs each 4 MB partition through its own queues, copies
and server round. None of them publishes that cost, so each is measured from **one cell** of the
quantitative survey's grid (Shi et al., IEEE Network 2021; HKBU-HPML/ddl-benchmarks, results
2020-05-29), stated here, and judged on every other cell by :mod:`commlab.sim.survey`:

* ``horovod-nccl`` (plain ``horovod`` is the same: the survey's Horovod, built with NCCL): 1.08 ms
  per all-reduce operation, on GPU buffers. The cell: BERT-Base, WFBP over all-reduce, 4 GPUs
  of one node (631.8 samples/s, 2.97x one GPU). The survey's WFBP runs Horovod with fusion and
  its cycle time off (``HOROVOD_FUSION_THRESHOLD=0``, ``HOROVOD_CYCLE_TIME=0``), one operation per
  tensor, all inside one node, so no network enters: the per-operation cost is the value for
  which :func:`commlab.sim.iteration` gives that speedup. Every all-reduce method pays it per
  message: BSP once, WFBP per layer, MG-WFBP per merged group.
* ``horovod-mpi``: Horovod with GPU operations over CUDA-aware Open MPI on TCP
  (``HOROVOD_GPU_OPERATIONS=MPI``), as GRACE's environment builds it: the same negotiation, cycle
  and 1.08 ms per operation, and every collective staged by Open MPI through host memory, an
  all-reduce reduced by a CPU core (:func:`commlab.sim.data_path.staged_seconds`, ``"cuda-aware"``).
* ``horovod-cpu``: Horovod built without GPU operations, over MPI: the same, with each gradient
  copied to host memory by the framework and fused in a host buffer (``"host"``). No new constant
  is fitted for either: the staging's are data sheets' and the protocol model's copy rate.
* ``bytescheduler``: ByteScheduler over Horovod hands Horovod each partition as its own operation
  (Peng et al., SOSP 2019), so it pays Horovod's 1.08 ms per 4 MB partition of a message. No new
  constant.
* ``byteps``: 0.565 ms per 4,096,000-byte partition (the survey's ``BYTEPS_PARTITION_BYTES``). The
  cell: BERT-Base, WFBP over the parameter server, 4 GPUs of one node (652.78 samples/s).
* ``ddp``: PyTorch DistributedDataParallel: its buckets go to NCCL on GPU buffers with no
  negotiation among the ranks, and no cell of the survey measured it, so no cost per operation is
  charged; it runs DDP's buckets, ``fusion(mb=25)``, unless a schedule is given.
* ``ideal``: nothing; the default outside the survey's methods.

**How much of the communication overlaps with backward.** Every framework here sends a message
as soon as its policy releases it, on its own stream or thread, while backward goes on: Horovod's
background thread (over NCCL or MPI alike: the staging's copies and the CPU's work run there and
on the copy engines, not on the compute stream), DDP's buckets as they fill. The forward pass
waits for the last message. What differs is the message's length (the staging) and when it may
start (the policy below).

**What each runs when no schedule is given** (``schedule``): Horovod's background loop,
``cycle(ms=5, mb=64)`` (:class:`commlab.schedule.policies.Cycle`: every 5 ms the ready gradients
in messages of at most 64 MB, its defaults until v0.21), and DDP's buckets, ``fusion(mb=25)``; the
others send every gradient in one message after backward unless a schedule or a method says
otherwise (``schedule="none"`` asks for that under any framework).

**How each sends compressed tensors** (``compress_per``, :mod:`commlab.sim.compression`): Horovod
with a compressor compresses every tensor on its own in its hook (its ``Compression`` classes and
GRACE's compressors, Xu et al., ICDCS 2021), and ByteScheduler and BytePS, which sit on Horovod's
or their own per-tensor hooks, do the same: ``"tensor"``. DDP's communication hooks (its fp16 and
PowerSGD hooks) receive a fused bucket: ``"bucket"``, as does ``ideal``.

Cost of a message of n bytes: ``per_op * ceil(n / partition)`` (``per_op`` once when the framework
does not partition), beyond its collective's time, staged or not (:meth:`Framework.collective`).
:data:`CALIBRATION` lists the cells, so that a test can solve them again.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .. import checks
from ..spec import COMPRESS_PER
from .data_path import STAGINGS, staged_seconds


@dataclass(frozen=True)
class Framework:
    """A framework's seconds per operation, the partition size it cuts messages into (None: one
    operation per message), and what it compresses as one tensor: "tensor" or "bucket"."""

    name: str
    per_op: float
    partition: int | None = None
    compress_per: str = "bucket"
    schedule: str | None = None  # what it runs when no schedule is given (None: one message after backward)
    staging: str | None = None  # None: collectives on GPU buffers; else how they are staged through host memory

    @property
    def staged(self) -> bool:
        """Are its collectives staged through host memory (:data:`commlab.sim.data_path.STAGINGS`)?"""
        return self.staging is not None

    def __post_init__(self):
        checks.choice("compress_per", self.compress_per, COMPRESS_PER)
        if self.staging is not None:
            checks.choice("staging", self.staging, STAGINGS)

    def cost(self, nbytes: float) -> float:
        """Seconds this framework adds to a message of ``nbytes``."""
        if self.partition is None:
            return self.per_op
        return self.per_op * max(1, math.ceil(nbytes / self.partition))

    def collective(self, kind: str, nbytes: float, wire_s: float, gpus: int, device) -> float:
        """Seconds of one ``kind`` collective of ``nbytes`` per rank whose wire time is ``wire_s``
        among ``gpus`` ranks on ``device``'s host link: staged or not, plus :meth:`cost`."""
        if gpus == 1:
            return 0.0
        if self.staged:
            if device is None:
                raise ValueError(f"framework={self.name!r} stages every collective through host memory over "
                                 "the GPU's PCIe link: give device= (a name of sim.DEVICES or a sim.Device), or "
                                 "a profile made by sim.profile(..., device=...)")
            wire_s = staged_seconds(kind, nbytes, wire_s, gpus, device, self.staging)
        return wire_s + self.cost(nbytes)


HOROVOD_OP = 1.08e-3
HOROVOD_CYCLE = "cycle(ms=5, mb=64)"
_NCCL = Framework("horovod-nccl", HOROVOD_OP, compress_per="tensor", schedule=HOROVOD_CYCLE)
FRAMEWORKS: dict[str, Framework] = {
    "ideal": Framework("ideal", 0.0),
    "horovod-nccl": _NCCL,
    "horovod": dataclasses.replace(_NCCL, name="horovod"),  # the survey's Horovod, built with NCCL
    "horovod-mpi": dataclasses.replace(_NCCL, name="horovod-mpi", staging="cuda-aware"),  # GRACE's build
    "horovod-cpu": dataclasses.replace(_NCCL, name="horovod-cpu", staging="host"),
    "bytescheduler": Framework("bytescheduler", HOROVOD_OP, 4_000_000, compress_per="tensor"),
    "byteps": Framework("byteps", 0.565e-3, 4_096_000, compress_per="tensor"),
    "ddp": Framework("ddp", 0.0, schedule="fusion(mb=25)"),
}
# framework -> the one cell of the survey's grid its constant comes from
CALIBRATION = {
    "horovod": dict(model="bert-base", method="wfbp_a2a", gpus=4, samples_per_s=631.8, single=212.8),
    "byteps": dict(model="bert-base", method="wfbp_ps", gpus=4, samples_per_s=652.78, single=212.8),
}


def framework(spec) -> Framework:
    """A Framework from itself or a name of :data:`FRAMEWORKS`."""
    return spec if isinstance(spec, Framework) else FRAMEWORKS[checks.choice("framework", spec, FRAMEWORKS)]
