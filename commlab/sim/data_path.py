"""Where a framework's collective finds its bytes: in GPU memory, or staged through host memory.

NCCL (Horovod built with ``HOROVOD_GPU_OPERATIONS=NCCL``, PyTorch DDP) reads and writes GPU
buffers: a collective costs its wire time and nothing more. Horovod built without GPU operations
(the usual build over MPI, where MPI is not CUDA-aware) registers its TensorFlow operations for the
CPU only, so the framework copies each gradient from the GPU to host memory before the operation
and back after it, and Open MPI moves and reduces the bytes with the CPU over TCP (Horovod's GPU
guide: NCCL "will significantly improve performance over the CPU version"). Per collective of
``n`` bytes among P ranks, with one core of the rank doing Horovod's and MPI's work, on a device
whose host link moves ``pcie`` bytes/s per direction (:attr:`commlab.sim.devices.Device.pcie`, the
data sheet's rate after line coding, times :data:`TLP_EFFICIENCY`) and whose host core copies
``host_bandwidth`` bytes/s (:attr:`~commlab.sim.devices.Device.host_bandwidth`, the copy rate
:mod:`commlab.net.protocols` assumes):

* **PCIe**: the gradient down to the host before, the result up after: ``(n + back) / pcie``,
  ``back`` = n for an all-reduce and P n for an all-gather (every rank's payload comes up);
* **the fusion buffer**: Horovod copies the tensors into its host fusion buffer before calling
  MPI and out of it after: ``(n + back) / host_bandwidth``;
* **the reduction**: the ring's reduce-scatter adds (P-1)/P n bytes of received data to local
  data on the CPU, reading two operands and writing one: ``3 (P-1)/P n / host_bandwidth``. Open
  MPI's ring posts the receive of the next block before it reduces the current one, so the
  reduction runs under the wire: the collective lasts ``max(wire, reduction)``. An all-gather
  reduces nothing.

So a staged collective lasts ``(n + back)(1/pcie + 1/host_bandwidth) + max(wire, reduction)``, the
copies in series: TensorFlow's copy of a tensor ends before Horovod may take it, and Horovod's
fusion copies end before MPI starts. The wire's own time (TCP's framing and its socket copies) is
the link's (:func:`commlab.net.protocols.tcp`). Nothing is fitted to a measured run;
``benchmarks/host_path.py`` measures the copy and the reduction on the machine it runs on beside
the rates assumed, and ``benchmarks/horovod_cpu_vs_nccl.py`` sets the model beside Horovod's own
comparison of its two builds, which it explains only in small part (the four ranks of a node
sharing one host, and MPI's progress competing with the framework, are not modelled).
"""
from __future__ import annotations

# A PCIe transaction-layer packet of 256 payload bytes carries about 24 bytes of header, sequence
# number, checksum and framing (PCI Express Base Specification 3.0: 12-16 byte header, 2-byte
# sequence, 4-byte LCRC, 2 framing symbols): the payload is 256 / 280 of the link's bytes.
TLP_EFFICIENCY = 256 / 280


def staged_seconds(kind: str, nbytes: float, wire_s: float, gpus: int, device) -> float:
    """Seconds of one ``kind`` collective ("allreduce", "allgather" or "tree") of ``nbytes`` per
    rank whose wire time is ``wire_s``, among ``gpus`` ranks, staged through ``device``'s host."""
    if gpus == 1:
        return wire_s
    gathered = kind == "allgather"
    moved = nbytes * (1 + (gpus if gathered else 1))
    core = device.host_bandwidth
    reduction = 0.0 if gathered else 3 * (gpus - 1) / gpus * nbytes / core
    return moved / (device.pcie * TLP_EFFICIENCY) + moved / core + max(wire_s, reduction)
