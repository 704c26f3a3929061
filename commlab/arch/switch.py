"""In-network aggregation for real: a "switch" rank sums the workers' fixed-point chunks through a
bounded pool of slots, and the result is an all-reduce.

The protocol of SwitchML (Sapio et al., NSDI 2021), over :class:`~commlab.runtime.Comm`, with the
last rank playing the programmable switch and ranks ``0..p-1`` the workers (the timing model of
the same protocol is :mod:`commlab.arch.innetwork`):

1. **Scale.** Switches add integers. Every worker sends its largest |value| (and its length); the
   switch returns the maximum M, and every worker scales by the same power of two
   ``f = 2^floor(log2((2^31 - 1) / (p M)))``: p values of at most M then sum to less than
   2^31, so the int32 sum never overflows, and each value is rounded by at most 1/(2f).
2. **Stream.** The vector is cut into chunks of ``elements`` int32 values; a packet is the chunk's
   index and its values, ``4 (elements + 1)`` bytes. Chunk i goes into slot ``i mod slots``.
   A worker first sends one chunk per slot, then, each time the sum of chunk i comes back, the
   chunk that reuses that slot, i + slots (self-clocking: no slot is ever asked to hold two
   chunks, so the switch's memory is ``slots x elements`` integers whatever the model's size).
3. **Aggregate.** The switch adds each packet into its slot; when all p workers' packets for the
   slot have arrived it sends the sum to every worker and frees the slot.

Bytes: each worker sends and receives its vector once, ``4 (n + chunks)`` bytes plus the scale
exchange, against the ring's ``2 (p-1)/p`` of the vector each way; the switch port carries p
times that. The switch rank's clock is one rank's, with one port, so its simulated time is not a
switch's (whose ports run in parallel): the chapter times the protocol with the closed form and
uses this run for its result and its bytes.
"""
from __future__ import annotations

import math

import torch

from .. import checks
from ..flat import flatten, grads, unflatten_into
from .base import Architecture
from .exchange import Exchange
from .innetwork import ina_time

TAG = 1400
INT32_MAX = 2 ** 31 - 1
GOODBYE = -1  # the length a worker announces when it leaves


def _check(comm, slots, elements):
    if comm.world_size < 2:
        raise ValueError(f"in-network aggregation needs at least one worker and the switch rank; "
                         f"world_size={comm.world_size}")
    for name, v in (("slots", slots), ("elements", elements)):
        checks.integer(name, v, where="in-network aggregation")


def scale_for(max_abs: float, workers: int) -> float:
    """The power-of-two scale under which ``workers`` values of at most ``max_abs`` sum in int32."""
    if max_abs == 0:
        return 1.0
    return 2.0 ** math.floor(math.log2(INT32_MAX / (workers * max_abs)))


def aggregate(comm, tensor: torch.Tensor, slots: int = 8, elements: int = 64, tag: int = TAG) -> torch.Tensor:
    """A worker's side: returns the sum over the workers (to within p / (2 f) per value)."""
    _check(comm, slots, elements)
    switch = comm.world_size - 1
    flat = tensor.detach().reshape(-1).float()
    comm.send(torch.tensor([flat.abs().max().item() if flat.numel() else 0.0, flat.numel()],
                           dtype=torch.float64), switch, tag)
    scale = scale_for(comm.recv(switch, tag).item(), switch)
    values = torch.round(flat.double() * scale).to(torch.int32)
    chunks = -(-flat.numel() // elements)
    total = torch.zeros(flat.numel(), dtype=torch.int32)
    works = []

    def send(i):
        packet = torch.cat([torch.tensor([i], dtype=torch.int32), values[i * elements:(i + 1) * elements]])
        works.append(comm.isend(packet, switch, tag))

    for i in range(min(slots, chunks)):
        send(i)
    for _ in range(chunks):
        packet = comm.recv(switch, tag)
        i = int(packet[0])
        total[i * elements:(i + 1) * elements] = packet[1:]
        if i + slots < chunks:
            send(i + slots)
    for w in works:
        w.wait()
    return (total.double() / scale).float().reshape(tensor.shape)


def serve(comm, slots: int = 8, elements: int = 64, tag: int = TAG) -> dict | None:
    """The switch's side of one aggregation: aggregate until every chunk is summed; returns what it
    held at most, or None when every worker said :func:`goodbye` instead."""
    _check(comm, slots, elements)
    workers = comm.world_size - 1
    hello = [comm.recv(w, tag) for w in range(workers)]
    lengths = {int(h[1]) for h in hello}
    if lengths == {GOODBYE}:  # every worker has left: no more aggregations
        return None
    if len(lengths) > 1:
        raise ValueError(f"in-network aggregation: the workers' vectors differ in length: {sorted(lengths)}")
    reply = torch.tensor([max(float(h[0]) for h in hello)], dtype=torch.float64)
    for w in range(workers):
        comm.send(reply, w, tag)
    chunks = -(-lengths.pop() // elements)
    pool = torch.zeros(slots, elements, dtype=torch.int64)
    count, owner = [0] * slots, [None] * slots
    busiest, works = 0, []
    for _ in range(chunks * workers):
        src, packet = comm.recv_any(tag)
        i, values = int(packet[0]), packet[1:]
        s = i % slots
        if owner[s] not in (None, i):
            raise RuntimeError(f"switch: worker {src} sent chunk {i} into slot {s}, "
                               f"still busy with chunk {owner[s]}")
        owner[s] = i
        pool[s, :values.numel()] += values
        count[s] += 1
        busiest = max(busiest, sum(o is not None for o in owner))
        if count[s] == workers:
            result = torch.cat([packet[:1], pool[s, :values.numel()].to(torch.int32)])
            works += [comm.isend(result, w, tag) for w in range(workers)]
            pool[s].zero_()
            count[s], owner[s] = 0, None
    for w in works:
        w.wait()
    return {"slots_used": busiest, "pool_bytes": pool.numel() * 4, "chunks": chunks}


def switch_allreduce(comm, tensor: torch.Tensor, slots: int = 8, elements: int = 64, tag: int = TAG):
    """Run on every rank: the workers get the sum of their ``tensor``s, the last rank (the
    switch, whose ``tensor`` is ignored) gets :func:`serve`'s record."""
    if comm.rank == comm.world_size - 1:
        return serve(comm, slots, elements, tag)
    return aggregate(comm, tensor, slots, elements, tag)


def goodbye(comm, tag: int = TAG) -> None:
    """A worker's last word to the switch: it will send no more vectors."""
    comm.send(torch.tensor([0.0, float(GOODBYE)], dtype=torch.float64), comm.world_size - 1, tag)


class InNetwork(Architecture):
    """``switchml``, ``switchml(slots=8, elements=64)``: every step the workers' gradients are summed
    by a switch rank, launched after the workers, through its pool of ``slots`` x ``elements``
    integers (:func:`aggregate`, :func:`serve`), and each worker divides the sum by their number.
    The average is exact to within the fixed-point rounding, p / (2 f) per value. The switch's
    fixed point is its own quantization, so there is no compressor, no schedule and no server
    policy. Bytes per step and worker: ``4 (n + chunks)`` each way plus the scale exchange;
    closed form :func:`commlab.arch.innetwork.ina_time` (a switch's ports run in parallel; the
    switch rank of a run has one port, so its simulated clock is pessimistic, see the module doc)."""

    name = "switchml"
    provides = frozenset({"step", "average"})
    decodes = "none"  # the switch's fixed point is its own quantization

    def __init__(self, slots: int = 8, elements: int = 64):
        for label, v in (("slots", slots), ("elements", elements)):
            checks.integer(label, v, where="switchml")
        self.slots, self.elements = slots, elements

    def world_size(self, workers: int) -> int:
        """Ranks to launch: the workers plus one switch rank."""
        return workers + 1

    def serves(self, rank: int, workers: int) -> bool:
        """True for the switch, the rank after the last worker."""
        return rank == workers

    def serve(self, comm, model, optimizer, setup) -> dict:
        """The switch rank: one aggregation per call of the workers, until they say goodbye."""
        rounds, busiest = 0, 0
        while (record := serve(comm, self.slots, self.elements)) is not None:
            rounds, busiest = rounds + 1, max(busiest, record["slots_used"])
        return {"role": "switch", "aggregations": rounds, "slots_used": busiest,
                "pool_bytes": self.slots * self.elements * 4, "stats": comm.stats.snapshot(), "sim": comm.now}

    def exchange(self, comm, model, optimizer, setup) -> "SwitchExchange":
        """This worker's :class:`SwitchExchange`."""
        return SwitchExchange(comm, self, setup.workers)

    def time(self, nbytes: float, workers: int, link, network=None) -> float:
        """Closed-form seconds of one aggregation on ``link`` (the run's ``network`` does not enter)."""
        return ina_time(nbytes, link, self.slots, self.elements)

    def __repr__(self) -> str:
        return f"InNetwork(slots={self.slots}, elements={self.elements})"


class SwitchExchange(Exchange):
    """A worker's side of ``arch="switchml"``: the average is the switch's sum over ``workers``."""

    def __init__(self, comm, arch: InNetwork, workers: int):
        self.comm, self.arch, self.workers = comm, arch, workers

    def step(self, model, optimizer) -> None:
        """Replace the gradients by their mean through the switch, then the optimizer step."""
        g = grads(model)
        unflatten_into(self._mean(flatten(g)), g)
        optimizer.step()

    def average(self, tensors) -> list[torch.Tensor]:
        """The mean of each tensor over the workers, through the switch."""
        tensors = list(tensors)
        out = [torch.empty_like(t) for t in tensors]
        unflatten_into(self._mean(flatten(tensors)), out)
        return out

    def _mean(self, flat: torch.Tensor) -> torch.Tensor:
        return aggregate(self.comm, flat, self.arch.slots, self.arch.elements).div_(self.workers)

    def close(self) -> None:
        """Tell the switch this worker sends no more vectors."""
        goodbye(self.comm)
