"""In-network aggregation: the switch sums the workers' packets (SwitchML, ATP), in closed form.

SwitchML (Sapio et al., "Scaling Distributed Machine Learning with In-Network Aggregation", NSDI
2021) and ATP (Lao et al., NSDI 2021) program the top-of-rack switch to add the workers' gradient
packets: each worker sends its n bytes to the switch once and receives the n bytes of the sum
once, against the ring's 2 (p-1)/p n each way in 2 (p-1) steps. A switch has little memory, so it
aggregates through a bounded **pool of slots**: a packet carries one chunk of ``elements``
integers into a slot; when every worker's packet for the slot has arrived the switch multicasts
the sum and the slot is free for the worker's next chunk. Switches add integers, so the floats
are scaled to fixed point first (:mod:`commlab.arch.switch` runs this protocol for real, and
``Trainer(arch="switchml")`` trains through it).

**Time** of one aggregation of n bytes over a full-duplex link (alpha, C), by default 100 Gb/s
Ethernet with a kernel-bypass stack (SwitchML's DPDK or RDMA workers; ``rdma-100GbE`` of
:mod:`commlab.net.protocols`):

* the packets: n / (4 elements) chunks, each ``4 elements + header`` bytes on the wire;
* self-clocked: a worker has at most ``slots`` packets in flight, and a slot comes back after a
  round trip 2 alpha, so it streams at ``min(C, slots * packet / (2 alpha))``;
* T_ina = 2 alpha + wire bytes / rate: sending and receiving overlap (full duplex).

The ring all-reduce it replaces is :func:`commlab.arch.ring.cost`, 2 (p-1) (alpha + n/(p C)); the
speedup T_ring / T_ina tends to 2 (p-1)/p x payload / packet for large messages and to about p-1
for small ones, where the ring pays 2 (p-1) start-ups and the switch one round trip.

Headers: 54 bytes by default, Ethernet 14 + IPv4 20 + UDP 8 + 12 for the aggregation header (slot,
chunk, worker bitmap); SwitchML's exact header is not modelled beyond that, an assumption.
"""
from __future__ import annotations

from .. import checks
from . import ring
from ..net.link import get_link

HEADER = 54


def _positive(name, v):
    if not checks.is_number(v) or v <= 0:
        raise ValueError(f"in-network aggregation: {name}={v!r} must be > 0")


def ina_wire_bytes(nbytes: float, elements: int = 64, header: int = HEADER) -> float:
    """Bytes one worker sends (and receives) for n bytes of float32 gradient."""
    _positive("elements", elements)
    packets = -(-int(nbytes) // (4 * elements))
    return packets * (4 * elements + header)


def ina_time(nbytes: float, link="rdma-100GbE", slots: int = 512, elements: int = 64, header: int = HEADER) -> float:
    """Seconds of one in-network aggregation of ``nbytes`` (see the module doc)."""
    for name, v in (("nbytes", nbytes), ("slots", slots), ("elements", elements)):
        _positive(name, v)
    model = get_link(link)
    packet = 4 * elements + header
    window = slots * packet / (2 * model.alpha) if model.alpha > 0 else float("inf")
    rate = min(1.0 / model.beta, window)
    return 2 * model.alpha + ina_wire_bytes(nbytes, elements, header) / rate


def ina_speedup(nbytes: float, workers: int, link="rdma-100GbE", **pool) -> float:
    """Ring all-reduce time over in-network aggregation time, same link and bytes."""
    checks.integer("workers", workers, 2, where="in-network aggregation")
    return ring.cost(nbytes, workers, get_link(link)) / ina_time(nbytes, link, **pool)
