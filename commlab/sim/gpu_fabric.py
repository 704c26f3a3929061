"""GPU clusters as fabrics: what is inside a node, and how nodes reach the network.

:func:`gpu_cluster` builds a :class:`~commlab.sim.fabric.Fabric` whose hosts are GPUs, rank
``node * gpus_per_node + g``:

* **Inside a node** (``node=``): ``"nvswitch"``, every GPU on one NVSwitch at the NVLink rate
  (a DGX A100 or H100); or ``"pcie"``, a PCIe tree: GPUs in pairs under a PCIe switch, the
  switches under the CPU's root complex, every cable at the PCIe rate, so two GPUs under different
  switches share the root (a typical 8-GPU PCIe server).
* **Into the network** (``network=``): ``"rails"``, rail-optimized: one NIC per GPU, and NIC g of
  every node on rail switch g, the rails joined by a non-blocking spine (NVIDIA's DGX SuperPOD
  layout: a ring or tree that keeps each GPU on its own rail never leaves it); or ``"tor"``, one NIC
  per node shared by its GPUs, on one top-of-rack switch.

A GPU reaches its own NIC over a dedicated cable at the NIC's rate on an NVSwitch node, and
through its PCIe switch on a PCIe node; the shared NIC of ``"tor"`` hangs off the node's hub
(the NVSwitch, or the root complex). GPUs never relay traffic; switches do. Every flow pays the
fabric's one start-up, the network link's alpha, inside a node too (a simplification: NVLink's
few microseconds are of the same order).

:data:`FABRICS` names every builder, and :func:`build` makes one by name with a clear error.
"""
from __future__ import annotations

from .. import checks
from .fabric import Fabric, _rate, bcube, fat_tree, torus_2d

NODES = ("nvswitch", "pcie")
NETWORKS = ("rails", "tor")


def gpu_cluster(nodes: int, gpus_per_node: int = 8, node: str = "nvswitch", network: str = "rails",
                link="200GbHDR-IB", nvlink="NVLink3-A100", pcie="PCIe3-mgwfbp") -> Fabric:
    """``nodes`` nodes of ``gpus_per_node`` GPUs; ``node`` in :data:`NODES`, ``network`` in
    :data:`NETWORKS`; ``link`` the NICs' link, ``nvlink``/``pcie`` the links inside a node."""
    checks.integer("nodes", nodes, where="gpu_cluster")
    checks.integer("gpus_per_node", gpus_per_node, where="gpu_cluster")
    if node not in NODES:
        raise ValueError(f"gpu_cluster: node={node!r}; valid: {', '.join(NODES)}")
    if network not in NETWORKS:
        raise ValueError(f"gpu_cluster: network={network!r}; valid: {', '.join(NETWORKS)}")
    alpha, nic = _rate(link)
    inside = _rate(nvlink if node == "nvswitch" else pcie)[1]
    g = gpus_per_node
    hosts = [("gpu", n, i) for n in range(nodes) for i in range(g)]
    f = Fabric(f"{nodes} x {g} GPUs ({node}, {network})", hosts, alpha)
    for n in range(nodes):
        hub = ("nvswitch", n) if node == "nvswitch" else ("cpu", n)
        for i in range(g):
            if node == "nvswitch":
                f.connect(("gpu", n, i), hub, inside)
            else:
                f.connect(("gpu", n, i), ("pcie", n, i // 2), inside)
                if i % 2 == 0:
                    f.connect(("pcie", n, i // 2), hub, inside)
            if network == "rails":
                attach = ("gpu", n, i) if node == "nvswitch" else ("pcie", n, i // 2)
                f.connect(attach, ("nic", n, i), nic if node == "nvswitch" else inside)
                f.connect(("nic", n, i), ("rail", i), nic)
        if network == "tor":
            f.connect(hub, ("nic", n), nic)
            f.connect(("nic", n), ("tor",), nic)
    if network == "rails" and g > 1:
        for i in range(g):
            f.connect(("rail", i), ("spine",), nic * nodes)  # non-blocking between rails
    return f


def switch_count(fabric: Fabric) -> int:
    """Network switches (NICs, NVSwitches, PCIe switches and CPUs are not counted)."""
    return sum(1 for s in fabric.switches if s[0] in ("edge", "agg", "core", "switch", "rail", "spine", "tor"))


FABRICS = {"fat_tree": fat_tree, "bcube": bcube, "torus_2d": torus_2d, "gpu_cluster": gpu_cluster}


def build(name: str, **options) -> Fabric:
    """The fabric ``name`` of :data:`FABRICS` built with ``options``."""
    if name not in FABRICS:
        raise ValueError(f"unknown fabric {name!r}; valid: {', '.join(FABRICS)}")
    return FABRICS[name](**options)
