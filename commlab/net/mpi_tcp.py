"""What MPI reaches over TCP on Ethernet, as others measured it, beside the model.

:func:`commlab.net.protocols.tcp` gives a TCP link from first principles and two assumptions
(framing leaves 94.1% of the line rate to data; a core copies every byte twice at 10 GB/s, in
series with the wire): 0.92 Gb/s on 1GbE, 7.6 on 10GbE, 14.8 on 25GbE, 28 on 100GbE. The
literature measured what MPI itself reaches between two hosts for large messages
(:data:`MEASURED`, each with its source; nothing here is fitted to a training run):

* **1GbE** runs at the wire's rate: about 0.9 Gb/s with no tuning.
* **10GbE** runs at the wire's rate on a tuned host (9.4 Gb/s once the CPU's power states and the
  NIC's interrupt coalescing were turned off) and well below it on an untuned one (6.1 Gb/s on the
  same hosts before); Shi et al.'s testbed moved a 1 MB message at 8.2 Gb/s.
* **25GbE and faster**: one connection falls far short of the line. Amazon EC2 holds one TCP flow
  near 10 Gb/s (one iperf3 stream reached 9.46 Gb/s on its 100 Gb/s instances, MPI over one
  connection 9.45 there and 9.95 on its 25 Gb/s ones); Shi et al.'s 100GbE moved a 1 MB message at
  16.5 Gb/s; and Open MPI's ``btl_tcp_links=36`` (36 connections for one pair of ranks) reached 22.8
  on EC2, "limited by thread/CPU" in its author's words.

So above 10 Gb/s a TCP link's rate is a property of the hosts and the network between them, known
only by measuring them (``osu_bw`` between two nodes, or ``iperf3`` with one stream); the nominal
links are a middle guess. :func:`table` sets the measurements beside
:func:`commlab.net.protocols.tcp`'s rate at the same line rate.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .protocols import tcp


@dataclass(frozen=True)
class Reach:
    """One measurement: the line rate and the data rate MPI reached (Gb/s), how, and where it is printed."""
    line_gbits: float
    gbits: float
    setting: str
    source: str


_USERS = "Open MPI users' mailing list, April 2014 (open-mpi.org/community/lists/users/2014/04/)"
_SHI = "Shi et al., IEEE Network 2021, section 2"
_ZHUANG = "J. Zhuang, 'MPI over Multiple TCP Connections on EC2 C5n Instances', 2019 (jiaweizhuang.github.io)"
MEASURED: tuple[Reach, ...] = (
    Reach(1, 0.901, "Open MPI, a user's bandwidth program, largest message", _USERS + ", message 24210"),
    Reach(10, 6.08, "Open MPI 1.8, TCP transport at its defaults, back-to-back hosts, osu_bw peak",
          _USERS + ", message 24214"),
    Reach(10, 9.39, "the same hosts, CPU power states and NIC interrupt coalescing off, 1 MB socket buffers "
          "(which added 50 Mb/s), peak of a benchmark not named", _USERS + ", message 24239"),
    Reach(10, 8.2, "TCP/IP on Shi et al.'s testbed, 1 MB message (Open MPI's osu benchmarks over its TCP transport, "
          "as HKBU-HPML/ddl-benchmarks' osu_benchmarks/latency.sh runs them)", _SHI),
    Reach(25, 9.95, "Open MPI 4.0.1 with UCX over TCP, EC2 p3.16xlarge, osu_bw 4 MB (its reporter: one socket per "
          "endpoint)", "openucx/ucx issue 4221 (2019)"),
    Reach(100, 16.5, "TCP/IP on Shi et al.'s testbed, 1 MB message (as the 10GbE row)", _SHI),
    Reach(100, 9.45, "Open MPI 4.0.0 TCP transport, EC2 c5n.18xlarge, one connection, osu_bw 1 MB", _ZHUANG),
    Reach(100, 22.8, "the same with btl_tcp_links=36 (36 connections for the pair), osu_bw 1 MB", _ZHUANG),
)


def table() -> pd.DataFrame:
    """One row per measurement: line rate, measured Gb/s, its share of the line rate, the nominal
    TCP link's Gb/s at that line rate (:func:`commlab.net.protocols.tcp`), setting and source."""
    rows = [dict(line_gbits=r.line_gbits, measured_gbits=r.gbits, of_line=r.gbits / r.line_gbits,
                 model_gbits=8 * tcp(r.line_gbits).gbytes_per_s, setting=r.setting, source=r.source)
            for r in MEASURED]
    return pd.DataFrame(rows)
