"""Transport protocols: RDMA against TCP on the same wire, as alpha-beta links with a CPU cost.

A message of n bytes over a protocol costs its stack's start-up plus, per byte, the wire's time and
the CPU's: TCP copies each byte from the application into the kernel at the sender and back out at
the receiver (and a core runs the stack); RDMA (InfiniBand verbs, RoCE) lets the NIC read and
write registered memory itself, zero copy, with a microsecond-scale start-up. As one link::

    alpha = latency,   beta = 1 / (line rate x payload fraction) + copies / copy rate

(the copies counted in series with the wire: one core drives one connection, the case of a
single all-reduce stream). The **payload fraction** is what framing leaves of the line rate, from
first principles: a TCP segment on standard 1500-byte Ethernet frames carries 1448 bytes of data
(1500 less 20 bytes of IP header, 20 of TCP header and 12 of TCP timestamps) in 1538 bytes of
wire time (the frame's 14-byte header and 4-byte checksum, the 8-byte preamble and the 12-byte
gap between frames), 94.1% of the line rate; RDMA's large MTU (4096 bytes) makes framing
negligible and we leave it out. The profiles below are nominal line rates with typical latencies
and a 10 GB/s memory copy per core, assumptions, not measurements; with them a TCP stream reaches
0.92 Gb/s of 1GbE (the framing limit, 0.94 Gb/s, is what a bulk transfer reports there), 7.6 of
10GbE, 14.8 of 25GbE and 28 of 100GbE: on 1 and 10GbE the wire is the bottleneck, on 25GbE and
above the copying core. What MPI was measured to reach (:mod:`commlab.net.mpi_tcp`, with sources)
sits at or below these rates except on a tuned 10GbE host: 0.9 Gb/s on 1GbE, 6.1 to 9.4 on 10GbE
(an untuned host and a tuned one), and on 25 and 100GbE about 10 to 16.5 over one connection and
22.8 over 36 connections for one pair of ranks.

The pattern to reproduce (Shi et al., "A Quantitative Survey of Communication Optimizations in
Distributed Deep Learning", IEEE Network 2021, section 2.3.3): the same job scales best on 100Gb
InfiniBand with RDMA, less on 100GbE with TCP, far less on 10GbE.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from .link import LinkModel, register


COPY_RATE = 10e9  # bytes per second one core copies: an assumption (module doc)


@dataclass(frozen=True)
class Protocol:
    """A transport on a wire: line rate (Gb/s), the stack's start-up latency and the CPU copies per byte."""
    name: str
    gbits: float        # line rate, Gb/s
    latency: float      # seconds per message: the stack's start-up
    copies: int = 0     # CPU copies of every byte (sender + receiver)
    copy_rate: float = COPY_RATE  # bytes per second one core copies
    payload: float = 1.0  # fraction of the line rate left for data after framing

    def cpu_seconds(self, nbytes: float) -> float:
        """CPU time spent copying ``nbytes`` (0 with RDMA)."""
        return self.copies * nbytes / self.copy_rate

    def link(self) -> LinkModel:
        """The protocol as one link: alpha = latency, beta = 8 / (line rate x payload) + copies / copy rate."""
        beta = 8 / (self.gbits * 1e9 * self.payload) + self.copies / self.copy_rate
        return LinkModel(self.latency, beta, self.name)

    @property
    def gbytes_per_s(self) -> float:
        """Effective bandwidth in GB/s: 1e-9 / beta (the copies included)."""
        return 1e-9 / self.link().beta


TCP_PAYLOAD = 1448 / 1538  # data bytes per wire byte of a full TCP segment on 1500-byte Ethernet frames


def tcp(gbits: float) -> Protocol:
    """TCP over Ethernet of ``gbits`` Gb/s: 25 us start-up, two copies per byte, framing."""
    return Protocol(f"tcp-{gbits:g}GbE", gbits, 25e-6, copies=2, payload=TCP_PAYLOAD)


PROTOCOLS: dict[str, Protocol] = {
    "rdma-100GbIB": Protocol("rdma-100GbIB", 100, 2e-6),
    "rdma-100GbE": Protocol("rdma-100GbE", 100, 3e-6),  # RoCEv2
    **{f"tcp-{g}GbE": tcp(g) for g in (100, 25, 10, 1)},
}


def protocol(name) -> Protocol:
    """A Protocol from itself or a name of :data:`PROTOCOLS`."""
    return name if isinstance(name, Protocol) else PROTOCOLS[checks.choice("protocol", name, PROTOCOLS)]


for _p in PROTOCOLS.values():
    framing = f", {_p.payload:.1%} of it left by framing" if _p.payload < 1 else ""
    register(_p.link(), f"nominal transport: {_p.gbits:g} Gb/s line rate{framing}, {_p.latency * 1e6:g} us start-up, "
                        f"{_p.copies} CPU copies per byte at {_p.copy_rate / 1e9:g} GB/s")
