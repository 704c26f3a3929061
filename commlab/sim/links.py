"""Links calibrated from the literature, for the simulator's clusters.

Each link is an alpha-beta (Hockney) model, one message of n bytes in ``alpha + n beta`` seconds
(:class:`commlab.net.link.LinkModel`). The figures below come from point-to-point or collective
*communication* measurements that the papers report; none is fitted to a published multi-GPU
training throughput or speedup, so comparing the simulator with those results is a test, not a
fit.

* ``100GbIB-survey``: 100 Gb/s InfiniBand (RDMA) of the testbed in Shi, Tang, Chu, Liu, Wang, Li,
  "A Quantitative Survey of Communication Optimizations in Distributed Deep Learning", IEEE
  Network 35(3), 2021. The survey's point-to-point latencies: a 16 KiB message in 7.85 us and a
  32 KiB one in 10.1 us (figures as relayed in our brief; the authors' benchmark repository,
  HKBU-HPML/ddl-benchmarks, runs the OSU ``osu_latency`` benchmark for them; we could not read
  the article's text ourselves). Two points give the line::

      beta  = (10.1 - 7.85) us / 16384 B = 1.373e-10 s/B   (7.28 GB/s, 58 Gb/s)
      alpha = 7.85 us - 16384 B * beta   = 5.60 us

* ``10GbE-mgwfbp`` and ``56GbIB-mgwfbp``: Shi, Chu, Li, "MG-WFBP: Merging Gradients Wisely for
  Efficient Communication in Distributed Deep Learning", IEEE TPDS 32(8), 2021 (INFOCOM 2019
  version: "MG-WFBP: Efficient Data Communication for Distributed Synchronous SGD Algorithms").
  MG-WFBP fits the time of a whole all-reduce of M bytes on P GPUs as ``a + b M``; the authors'
  code (HKBU-HPML/MG-WFBP, ``distributed_optimizer.py``, tables ``p_alpha_beta_10Gbps`` and
  ``p_alpha_beta_56Gbps``) carries the fits measured on their cluster of 4 nodes x 4 GPUs
  (hostfile ``cluster16``). We could not find the paper's table itself, so these are the
  released code's numbers. At P = 16 (4 nodes, the inter-node link the slowest hop of the
  ring) the ring's closed form ``a = 2 (P-1) alpha``, ``b = 2 (P-1)/P beta`` gives the link::

      10GbE:    a = 9.081e-4 s, b = 7.396e-10 s/B  ->  alpha = 30.3 us, beta = 3.944e-10 s/B
      56Gb IB:  a = 2.358e-4 s, b = 4.059e-10 s/B  ->  alpha = 7.86 us, beta = 2.165e-10 s/B

  (P = 8 gives alpha = 37.4 us, beta = 4.90e-10 for 10GbE and 6.97 us, 1.75e-10 for IB.) The
  10GbE beta is 2.5 GB/s, twice one 10GbE port's line rate: the fit does not say why (two ports
  bonded, or NCCL's protocol overlapping what the ring model serialises). We keep the measured
  value rather than correct it; ``commlab.net.link``'s nominal ``10GbE`` (1.25 GB/s) is the
  line-rate alternative.
* ``PCIe3-mgwfbp``: PCIe 3.0 x16 inside one node, from the same tables' P = 4 entry (one node
  of 4 GPUs: a = 4.204e-5 s, b = 2.059e-10 s/B): alpha = 7.0 us, beta = 1.373e-10 s/B
  (7.3 GB/s of the 15.75 GB/s nominal).

* ``NVLink3-A100`` and ``200GbHDR-IB``: nominal figures of a DGX A100 node (NVSwitch, and one
  200 Gb/s HDR InfiniBand adapter per GPU), the cluster of Megatron-LM's SC'21 runs, for the
  large-model planner (:mod:`commlab.parallel.planner`). Datasheet rates, not measurements.

Any name that is not here falls through to :data:`commlab.net.link.PROFILES` (nominal figures),
and a :class:`~commlab.net.link.LinkModel` is taken as it is.
"""
from __future__ import annotations

from ..net.link import PROFILES as NOMINAL
from ..net.link import LinkModel, get_link
from .protocols import PROTOCOLS


def _survey_ib() -> LinkModel:
    small, large = (16384, 7.85e-6), (32768, 10.1e-6)
    beta = (large[1] - small[1]) / (large[0] - small[0])
    return LinkModel(small[1] - small[0] * beta, beta, "100GbIB-survey")


def _ring_fit(a: float, b: float, p: int, name: str) -> LinkModel:
    """The link under a ring all-reduce of p ranks whose measured time is a + b M."""
    return LinkModel(a / (2 * (p - 1)), b * p / (2 * (p - 1)), name)


LINKS: dict[str, LinkModel] = {
    "100GbIB-survey": _survey_ib(),
    "10GbE-mgwfbp": _ring_fit(0.0009080981007148093, 7.395651186836712e-10, 16, "10GbE-mgwfbp"),
    "56GbIB-mgwfbp": _ring_fit(0.00023583677659915685, 4.0594787739537565e-10, 16, "56GbIB-mgwfbp"),
    "PCIe3-mgwfbp": _ring_fit(4.204298980348825e-05, 2.0589360830118177e-10, 4, "PCIe3-mgwfbp"),
    # nominal figures of a DGX A100 node (not measured): the large-model planner's default cluster
    "NVLink3-A100": LinkModel(3e-6, 1 / 300e9, "NVLink3-A100"),
    "200GbHDR-IB": LinkModel(2e-6, 1 / 25e9, "200GbHDR-IB"),
}

SOURCES: dict[str, str] = {
    "100GbIB-survey": "Shi et al., IEEE Network 2021: 16 KiB in 7.85 us, 32 KiB in 10.1 us",
    "10GbE-mgwfbp": "Shi, Chu, Li, TPDS 2021 (MG-WFBP code): all-reduce fit a + bM at P = 16",
    "56GbIB-mgwfbp": "Shi, Chu, Li, TPDS 2021 (MG-WFBP code): all-reduce fit a + bM at P = 16",
    "PCIe3-mgwfbp": "Shi, Chu, Li, TPDS 2021 (MG-WFBP code): all-reduce fit a + bM at P = 4, one node",
    "NVLink3-A100": "NVIDIA A100 datasheet: third-generation NVLink/NVSwitch, 600 GB/s per GPU in total, "
                    "300 GB/s each way (nominal; latency assumed 3 us)",
    "200GbHDR-IB": "NVIDIA DGX A100 datasheet: eight 200 Gb/s HDR InfiniBand adapters per node, one per GPU "
                   "(nominal 25 GB/s; latency assumed 2 us)",
}


def link(spec) -> LinkModel:
    """A LinkModel from itself, a name of :data:`LINKS`, a transport of
    :data:`commlab.sim.protocols.PROTOCOLS`, or a nominal profile name."""
    if isinstance(spec, str) and spec in LINKS:
        return LINKS[spec]
    if isinstance(spec, str) and spec in PROTOCOLS:
        return PROTOCOLS[spec].link()
    try:
        return get_link(spec)
    except ValueError:
        raise ValueError(f"unknown link {spec!r}; valid: {', '.join([*LINKS, *PROTOCOLS, *NOMINAL])} "
                         "(or a LinkModel(alpha, beta))") from None
