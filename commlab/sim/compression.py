"""Compressed data parallelism in the simulator: a compressor's bytes, collectives and arithmetic.

``sim.iteration(profile, cluster, compress="topk(0.01)+ef", framework="horovod")`` asks what a
compressor does to one iteration on a GPU cluster, from what the compressor declares
(:mod:`commlab.compress.cost`), nothing measured on this machine:

* **bytes and collectives**: ``compressor.wire(shape)``, the collectives one rank takes part in
  with the library's aggregation (:mod:`commlab.arch.aggregate`): an all-reduce of a summable
  tensor (fp16, rand-k with a shared seed), an all-gather of payloads (top-k, QSGD, signSGD, ...),
  PowerSGD's two all-reduces, gTop-k's tree, TernGrad's shared scale then an all-gather. Each is
  timed on the cluster's two-level links: the all-reduce by the cluster's own rule
  (:mod:`commlab.sim.closed_forms`), the ring all-gather and gTop-k's binomial tree through all P
  GPUs, a step as slow as its slowest kind of hop (``(P-1) T(m)`` and ``2 ceil(log2 P) T(m)`` on
  the slowest link, m one rank's payload);
* **arithmetic**: ``compressor.cost(shape)``'s encode, and the decode of one payload, or of the
  P payloads an all-gather brings (``combine_work(shape, P)``), timed on the profile's device
  (:meth:`commlab.sim.devices.Device.work_seconds`: memory passes at the data sheet's bandwidth,
  kernel launches, a selection, host round trips); or, with ``compress_costs=``, what an
  implementation measured (:class:`commlab.sim.cost_table.CostTable`).

**Where the arithmetic sits.** Encoding and decoding are GPU kernels on the compute stream, as
Horovod's compression and PyTorch DDP's communication hooks launch them: a unit is encoded when
its last gradient is ready, which delays the backward of the layers after it (the encode is
charged to the backward of the unit's last-ready layer), and decoded before the next forward
reaches its first layer (charged to that layer's forward). Only the collectives overlap with
backward, on the communication stream. Without compression nothing changes.

**Units: tensor or bucket** (``Framework.compress_per``). Horovod with a compressor, and so
ByteScheduler and BytePS, compress **each tensor** on its own (``"tensor"``): every tensor pays
its kernel launches and its payload's header, and its shape decides a low-rank factorization.
Horovod then fuses the compressed tensors that are ready into one operation per collective, so
a message of the schedule is one operation per collective whatever the number of tensors in it.
DDP's hooks (``"bucket"``) compress each fused bucket as one flat tensor: the schedule's buckets
(or pieces), one encode and one decode each. A compressor that needs whole tensors (PowerSGD's
matrices, ``whole_tensors``) is compressed tensor by tensor under either.

A message of the schedule carries ``n`` raw bytes. With buckets its collectives are the
compressor's for a flat tensor of n / itemsize elements, exactly. With tensors, each collective
carries the same share of the raw bytes as over the whole model (exact for one message, as BSP
sends, the model's average for a schedule of several). A collective pays the framework's cost per
operation once (:mod:`commlab.sim.frameworks`), and a framework that stages its collectives through
host memory (``horovod-mpi``) pays that too (:mod:`commlab.sim.data_path`). One GPU communicates
nothing and compresses nothing.
"""
from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from dataclasses import dataclass

from ..arch.algorithms import slowest_hop
from ..net import cost as net_cost
from . import closed_forms

def _tree(n: float, p: int, link) -> float:
    return net_cost.reduce(n, p, link) + net_cost.broadcast(n, p, link)


def collectives(cluster) -> dict:
    """``{collective: seconds(nbytes)}`` on ``cluster`` for the collectives a compressor's wire names."""
    return {"allreduce": lambda n: closed_forms.allreduce_seconds(n, cluster),
            "allgather": lambda n: slowest_hop(net_cost.allgather_ring)(n, cluster),
            "tree": lambda n: slowest_hop(_tree)(n, cluster)}


def declared(device):
    """The timer of what a compressor declares (its ``cost(shape)``) on ``device``:
    ``timer(compressor, shape, workers) -> (encode s, decode s)``, the decode of all ``workers``
    payloads when they are all-gathered. ``timer.source`` says so."""
    def timer(compressor, shape, workers):
        d = math.prod(shape)
        cost = compressor.cost(shape)
        gathers = any(kind == "allgather" for kind, _ in compressor.wire(shape))
        decode = compressor.combine_work(shape, workers) if gathers else cost.decode
        return device.work_seconds(cost.encode, d), device.work_seconds(decode, d)
    timer.source = f"declared by each compressor, timed on {device.name}"
    return timer


@dataclass(frozen=True)
class Unit:
    """One compressed unit (a tensor, or a bucket as one flat tensor): its encode and decode
    seconds, and its collectives as ((round, collective), bytes) pairs."""

    encode: float
    decode: float
    wire: tuple

    @classmethod
    def of(cls, compressor, shape, timer, workers: int) -> "Unit":
        """The unit of ``shape`` compressed by ``compressor`` among ``workers`` ranks, its arithmetic
        timed by ``timer`` (:func:`declared`, or a measured :class:`~commlab.sim.cost_table.CostTable`'s)."""
        shape = tuple(int(s) for s in shape)
        wire = tuple(compressor.wire(shape))
        encode, decode = timer(compressor, shape, workers)
        return cls(encode, decode, tuple(((i, kind), nbytes) for i, (kind, nbytes) in enumerate(wire)))


@dataclass(frozen=True)
class Compression:
    """What a compressor adds to an iteration: the profile with the arithmetic charged to its
    layers, ``comm_time(nbytes)`` of a message of raw bytes, and totals per iteration."""

    compressor: object
    compress_per: str
    profile: object
    comm_time: object
    encode_s: float
    decode_s: float
    wire_bytes: int  # bytes one rank contributes to its collectives per iteration, every unit once
    costs_from: str = ""  # where the arithmetic's seconds come from

    @property
    def arithmetic_s(self) -> float:
        """Seconds of encoding and decoding per iteration on the compute stream."""
        return self.encode_s + self.decode_s


def _charge(profile, per_layer_encode, per_layer_decode):
    return dataclasses.replace(profile,
                               backward_s=[b + e for b, e in zip(profile.backward_s, per_layer_encode)],
                               forward_s=[f + d for f, d in zip(profile.forward_s, per_layer_decode)])


def _messages(cluster, fw, device):
    """seconds(wire) of one message's collectives, each one framework operation, staged through
    host memory when the framework does so (:meth:`commlab.sim.frameworks.Framework.collective`)."""
    times = collectives(cluster)

    def seconds(wire) -> float:
        return sum(fw.collective(kind, nbytes, times[kind](nbytes), cluster.gpus, device)
                   for (_, kind), nbytes in wire)
    return seconds


def by_tensor(profile, compressor, timer, cluster, fw, device=None) -> Compression:
    """Each tensor a unit: arithmetic per tensor, each collective's share of a message's raw bytes."""
    p = cluster.gpus
    encode, decode = [0.0] * profile.layers, [0.0] * profile.layers
    totals, units = defaultdict(int), {}
    for layer in range(profile.layers):
        for shape in profile.tensor_shapes(layer):
            if shape not in units:  # models repeat shapes: each is declared once
                units[shape] = Unit.of(compressor, shape, timer, p)
            u = units[shape]
            encode[layer] += u.encode
            decode[layer] += u.decode
            for key, nbytes in u.wire:
                totals[key] += nbytes
    raw = profile.total_bytes
    send = _messages(cluster, fw, device)
    shares = tuple(sorted(totals.items()))
    comm_time = lambda n: send(tuple((key, nbytes * n / raw) for key, nbytes in shares))  # noqa: E731
    return Compression(compressor, "tensor", _charge(profile, encode, decode), comm_time, sum(encode),
                       sum(decode), sum(totals.values()), timer.source)


def units_of(plan) -> list[tuple]:
    """The plan's compressed units as tuples of piece indices: its buckets, or each piece alone."""
    return [tuple(b) for b in plan.buckets] if plan.buckets is not None else [(i,) for i in range(len(plan.pieces))]


def by_bucket(profile, plan, compressor, timer, cluster, fw, device=None) -> Compression:
    """Each bucket of ``plan`` (or piece, for a plan without buckets) one flat tensor."""
    p, item = cluster.gpus, profile.itemsize
    encode, decode = [0.0] * profile.layers, [0.0] * profile.layers
    wire_bytes = 0
    for unit in units_of(plan):
        pieces = [plan.pieces[i] for i in unit]
        u = Unit.of(compressor, (sum(x.nbytes for x in pieces) // item,), timer, p)
        last = min(x.layer for x in pieces)  # backward reaches the lowest layer last
        encode[last] += u.encode
        decode[last] += u.decode
        wire_bytes += sum(nbytes for _, nbytes in u.wire)
    send = _messages(cluster, fw, device)
    comm_time = lambda n: send(Unit.of(compressor, (n // item,), timer, p).wire)  # noqa: E731
    return Compression(compressor, "bucket", _charge(profile, encode, decode), comm_time, sum(encode),
                       sum(decode), wire_bytes, timer.source)


def planning_time(compressor, timer, cluster, fw, itemsize: int, device=None):
    """``comm_time(nbytes)`` a schedule's policy plans with under compression: a bucket's encode,
    collectives and decode, as if on one stream (the policy weighs merging messages by it)."""
    send = _messages(cluster, fw, device)

    def comm_time(n: float) -> float:
        u = Unit.of(compressor, (max(1, int(n) // itemsize),), timer, cluster.gpus)
        return u.encode + send(u.wire) + u.decode
    return comm_time
