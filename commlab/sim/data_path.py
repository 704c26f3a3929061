"""Where a framework's collective finds its bytes: in GPU memory, or staged through host memory.

NCCL (Horovod built with ``HOROVOD_GPU_OPERATIONS=NCCL``, PyTorch DDP) reads and writes GPU
buffers: a collective costs its wire time and nothing more. Over MPI on TCP, with no NIC that
reads GPU memory, the bytes cross the GPU's host link, in one of two ways (``staging``):

* ``"cuda-aware"``: Horovod with GPU operations over CUDA-aware Open MPI
  (``HOROVOD_GPU_OPERATIONS=MPI``, ``OMPI_MCA_opal_cuda_support=true``: GRACE's environment,
  ``create-grace-env.sh`` of 2020, Horovod 0.18.2). Horovod fuses on the GPU and hands Open MPI
  device buffers. An all-reduce goes through Open MPI's ``coll/cuda`` component, which copies the
  buffer to host memory, runs the host all-reduce (a core adding the received blocks) and copies
  the result back (``coll_cuda_allreduce.c``): ``2 n / pcie + max(wire, reduction)``. Other
  collectives are point-to-point on device memory, where Open MPI's CUDA-aware convertor copies
  each fragment to or from a host buffer as the TCP transport sends or receives it: a ring
  all-gather crosses the link with every block it sends and receives, ``2 (P-1) n`` bytes, beside
  the wire: ``max(wire, 2 (P-1) n / pcie)``. A tree that reduces (gTop-k's) is charged as an
  all-reduce, copied down and back once.
* ``"host"``: Horovod built without GPU operations (its "CPU version"): it registers its
  TensorFlow operations for the CPU only, so each gradient is copied to host memory before the
  operation and back after, and Horovod fuses in a host buffer. Per collective of n bytes among P
  ranks: PCIe ``(n + back) / pcie``, ``back`` = n for an all-reduce and P n for an all-gather;
  the fusion buffer's copy in and out by one core, ``(n + back) / host_bandwidth``; and the ring's
  reduction, 3 (P-1)/P n bytes of memory traffic on the CPU, which Open MPI runs while the next
  block is on the wire. So ``(n + back)(1/pcie + 1/host_bandwidth) + max(wire, reduction)``, the
  copies in series: TensorFlow's copy of a tensor ends before Horovod may take it, and Horovod's
  fusion copies end before MPI starts.

``pcie`` is the device's host link per direction (:attr:`commlab.sim.devices.Device.pcie`, the
data sheet's rate after line coding, times :data:`TLP_EFFICIENCY`), ``host_bandwidth`` the copy
rate of one of its host's cores (:attr:`~commlab.sim.devices.Device.host_bandwidth`, as
:mod:`commlab.net.protocols` assumes), and the reduction reads two operands and writes one:
``3 (P-1)/P n / host_bandwidth``. The wire's own time (TCP's framing and its socket copies) is the
link's (:func:`commlab.net.protocols.tcp`). Nothing is fitted to a measured run;
``benchmarks/host_path.py`` measures the copy and the reduction on the machine it runs on beside
the rates assumed, and ``benchmarks/horovod_cpu_vs_nccl.py`` sets the host staging beside Horovod's
own comparison of its CPU and NCCL builds, which it explains only in small part (the four ranks
of a node sharing one host, and MPI's progress competing with the framework, are not modelled).
"""
from __future__ import annotations

# A PCIe transaction-layer packet of 256 payload bytes carries about 24 bytes of header, sequence
# number, checksum and framing (PCI Express Base Specification 3.0: 12-16 byte header, 2-byte
# sequence, 4-byte LCRC, 2 framing symbols): the payload is 256 / 280 of the link's bytes.
TLP_EFFICIENCY = 256 / 280


STAGINGS = ("cuda-aware", "host")


def staged_seconds(kind: str, nbytes: float, wire_s: float, gpus: int, device, staging: str = "host") -> float:
    """Seconds of one ``kind`` collective ("allreduce", "allgather" or "tree") of ``nbytes`` per
    rank whose wire time is ``wire_s``, among ``gpus`` ranks, staged through ``device``'s host the
    ``staging`` way (:data:`STAGINGS`, module doc)."""
    if gpus == 1:
        return wire_s
    gathered = kind == "allgather"
    pcie, core = device.pcie * TLP_EFFICIENCY, device.host_bandwidth
    reduction = 0.0 if gathered else 3 * (gpus - 1) / gpus * nbytes / core
    if staging == "cuda-aware":
        if gathered:  # every block a ring step sends or receives, fragment by fragment beside the wire
            return max(wire_s, 2 * (gpus - 1) * nbytes / pcie)
        return 2 * nbytes / pcie + max(wire_s, reduction)  # coll/cuda: down, the host's all-reduce, up
    moved = nbytes * (1 + (gpus if gathered else 1))
    return moved / pcie + moved / core + max(wire_s, reduction)
