"""Links measured in the literature, registered in :data:`commlab.net.link.PROFILES`.

Each link is an alpha-beta (Hockney) model, one message of n bytes in ``alpha + n beta`` seconds
(:class:`commlab.net.link.LinkModel`). The figures below come from point-to-point or collective
*communication* measurements that the papers report; none is fitted to a published multi-GPU
training throughput or speedup, so comparing the simulator with those results is a test, not a
fit.

* ``10GbE-survey``, ``100GbE-survey``, ``100GbIB-survey``: the three networks of the testbed of
  Shi, Tang, Chu, Liu, Wang, Li, "A Quantitative Survey of Communication Optimizations in
  Distributed Deep Learning", IEEE Network 35(3), 2021 (its section 2: 10GbE and 100GbE with
  TCP/IP, 100 Gb/s InfiniBand with RDMA). The survey reports, per network, the throughput that a
  1 MB and a 16 KB point-to-point message reach: 8.2 and 1.2 Gb/s, 16.5 and 4.6 Gb/s, 83.2 and
  16.7 Gb/s. Two points solve one alpha-beta line each (sizes 2^20 and 2^14 bytes)::

      T(n) = n * 8 / rate(n);   beta = (T(1 MB) - T(16 KB)) / (2^20 - 2^14);   alpha = T(16 KB) - 2^14 beta

      10GbE:    alpha = 94.7 us, 1.13 GB/s     (the 16 KB point alone: 109 us)
      100GbE:   alpha = 20.9 us, 2.15 GB/s     (TCP over 100GbE: a single stream's copies, not the wire)
      100Gb IB: alpha = 6.37 us, 11.1 GB/s     (its 16 KB message takes 7.85 us)

* ``PCIe3-survey``: one node of the same testbed, four RTX 2080 Ti on PCIe 3.0 x16 without
  peer-to-peer access (GeForce cards), so each GPU-to-GPU copy of a ring is staged through host
  memory and the four concurrent hops share the CPUs' root complexes. From first principles the
  per-hop rate lies between 3 GB/s (four staged flows through one x16 root port of about 12
  GB/s) and 6 GB/s (a store-and-forward copy over two private x16 links). The survey gives no
  microbenchmark inside a node, so its bandwidth is measured from **one cell of its grid**, the
  only one that is a bare all-reduce of a known size with nothing to overlap: BERT-Large, BSP
  over all-reduce, 4 GPUs on 100Gb IB, 53.08 samples/s against 49 on one GPU. Horovod all-reduces
  all 1,344,904,432 bytes after backward, so::

      T = 4 x 8 / 53.08 - 8 / 49 = 0.4396 s;   bus bandwidth = 2 (4-1)/4 n / T = 4.59 GB/s

  and the latency is twice PCIe's 5 us (two staged copies). That cell (and its copies on the
  other two networks) calibrates; :mod:`commlab.sim.survey` leaves it out when it judges the
  simulator.
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

Each is registered under its name with its source (:func:`commlab.net.link.register`), so that
every reader of a link name (the Trainer, ``sim.Cluster``, the planner, the command line) knows it.
"""
from __future__ import annotations

from .link import LinkModel, register


def two_point(gbits_large: float, gbits_small: float, name: str, large: int = 1 << 20, small: int = 1 << 14) -> LinkModel:
    """The alpha-beta line through two measured rates (Gb/s) of a ``large`` and a ``small`` message."""
    t_large, t_small = large * 8 / (gbits_large * 1e9), small * 8 / (gbits_small * 1e9)
    beta = (t_large - t_small) / (large - small)
    return LinkModel(t_small - small * beta, beta, name)


# the survey's one bare all-reduce inside a node: BERT-Large (1,344,904,432 bytes of gradients),
# BSP over all-reduce on 4 GPUs at 53.08 samples/s, batch 8, against 49 samples/s on one GPU
SURVEY_NODE_CELL = dict(model="bert-large", method="bsp_a2a", gpus=4, network="100GbIB", samples_per_s=53.08,
                        single=49.0, batch=8, nbytes=1344904432)


def _survey_node() -> LinkModel:
    c = SURVEY_NODE_CELL
    t = c["gpus"] * c["batch"] / c["samples_per_s"] - c["batch"] / c["single"]
    bus = 2 * (c["gpus"] - 1) / c["gpus"] * c["nbytes"] / t
    return LinkModel(2 * 5e-6, 1 / bus, "PCIe3-survey")


def _ring_fit(a: float, b: float, p: int, name: str) -> LinkModel:
    """The link under a ring all-reduce of p ranks whose measured time is a + b M."""
    return LinkModel(a / (2 * (p - 1)), b * p / (2 * (p - 1)), name)


MEASURED: dict[str, LinkModel] = {
    "10GbE-survey": two_point(8.2, 1.2, "10GbE-survey"),
    "100GbE-survey": two_point(16.5, 4.6, "100GbE-survey"),
    "100GbIB-survey": two_point(83.2, 16.7, "100GbIB-survey"),
    "PCIe3-survey": _survey_node(),
    "10GbE-mgwfbp": _ring_fit(0.0009080981007148093, 7.395651186836712e-10, 16, "10GbE-mgwfbp"),
    "56GbIB-mgwfbp": _ring_fit(0.00023583677659915685, 4.0594787739537565e-10, 16, "56GbIB-mgwfbp"),
    "PCIe3-mgwfbp": _ring_fit(4.204298980348825e-05, 2.0589360830118177e-10, 4, "PCIe3-mgwfbp"),
    # nominal figures of a DGX A100 node (not measured): the large-model planner's default cluster
    "NVLink3-A100": LinkModel(3e-6, 1 / 300e9, "NVLink3-A100"),
    "200GbHDR-IB": LinkModel(2e-6, 1 / 25e9, "200GbHDR-IB"),
}

_SOURCES: dict[str, str] = {
    "10GbE-survey": "Shi et al., IEEE Network 2021, section 2: 1 MB at 8.2 Gb/s, 16 KB at 1.2 Gb/s (TCP/IP)",
    "100GbE-survey": "Shi et al., IEEE Network 2021, section 2: 1 MB at 16.5 Gb/s, 16 KB at 4.6 Gb/s (TCP/IP)",
    "100GbIB-survey": "Shi et al., IEEE Network 2021, section 2: 1 MB at 83.2 Gb/s, 16 KB at 16.7 Gb/s (RDMA)",
    "PCIe3-survey": "Shi et al.'s grid (HKBU-HPML/ddl-benchmarks, 2020-05-29): BERT-Large BSP-A2A on 4 GPUs, "
                    "53.08 samples/s: one all-reduce of 1.34 GB in 0.44 s; latency 2 x 5 us (staged copies)",
    "10GbE-mgwfbp": "Shi, Chu, Li, TPDS 2021 (MG-WFBP code): all-reduce fit a + bM at P = 16",
    "56GbIB-mgwfbp": "Shi, Chu, Li, TPDS 2021 (MG-WFBP code): all-reduce fit a + bM at P = 16",
    "PCIe3-mgwfbp": "Shi, Chu, Li, TPDS 2021 (MG-WFBP code): all-reduce fit a + bM at P = 4, one node",
    "NVLink3-A100": "NVIDIA A100 datasheet: third-generation NVLink/NVSwitch, 600 GB/s per GPU in total, "
                    "300 GB/s each way (nominal; latency assumed 3 us)",
    "200GbHDR-IB": "NVIDIA DGX A100 datasheet: eight 200 Gb/s HDR InfiniBand adapters per node, one per GPU "
                   "(nominal 25 GB/s; latency assumed 2 us)",
}

for _name, _link in MEASURED.items():
    register(_link, _SOURCES[_name])
