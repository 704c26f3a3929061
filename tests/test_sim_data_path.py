"""sim.data_path: a collective staged through host memory, both ways (Horovod's CPU build, and
GPU operations over CUDA-aware Open MPI), against its closed form; horovod-mpi and horovod-cpu
against horovod-nccl when the host path is made free."""
import dataclasses
import math

import pytest

from commlab import sim
from commlab.net import protocols
from commlab.net.protocols import COPY_RATE
from commlab.sim.data_path import TLP_EFFICIENCY, staged_seconds
from commlab.sim.devices import DEVICES, PCIE
from commlab.sim.frameworks import FRAMEWORKS, HOROVOD_OP, Framework

N, P, PCIE3, V100 = 100e6, 8, PCIE[3], DEVICES["v100"]
FREE = dataclasses.replace(V100, pcie=math.inf, host_bandwidth=math.inf)  # a host path that costs nothing


def test_allreduce_pays_pcie_and_fusion_copies_both_ways_and_the_reduction_under_the_wire():
    assert V100.pcie == PCIE3 and V100.host_bandwidth == COPY_RATE
    copies = 2 * N / (PCIE3 * TLP_EFFICIENCY) + 2 * N / COPY_RATE
    reduction = 3 * (P - 1) / P * N / COPY_RATE
    assert staged_seconds("allreduce", N, 0.5, P, V100) == pytest.approx(copies + 0.5)  # the wire is longer
    assert staged_seconds("allreduce", N, 1e-3, P, V100) == pytest.approx(copies + reduction)  # the core is


def test_cuda_aware_open_mpi_copies_the_buffer_down_and_up_and_reduces_on_the_host():
    pcie = PCIE3 * TLP_EFFICIENCY
    reduction = 3 * (P - 1) / P * N / COPY_RATE
    assert staged_seconds("allreduce", N, 0.5, P, V100, "cuda-aware") == pytest.approx(2 * N / pcie + 0.5)
    assert staged_seconds("allreduce", N, 1e-3, P, V100, "cuda-aware") == pytest.approx(2 * N / pcie + reduction)
    # an all-gather's fragments cross the host link beside the wire: every block sent and received
    assert staged_seconds("allgather", N, 1e-3, P, V100, "cuda-aware") == pytest.approx(2 * (P - 1) * N / pcie)
    assert staged_seconds("allgather", N, 5.0, P, V100, "cuda-aware") == 5.0
    # the fusion buffer on the GPU: cheaper than the CPU build's whenever the host copies cost anything
    assert staged_seconds("allreduce", N, 0.5, P, V100, "cuda-aware") < staged_seconds("allreduce", N, 0.5, P, V100)


def test_allgather_brings_every_payload_up_and_reduces_nothing():
    got = staged_seconds("allgather", N, 1e-3, P, V100)
    assert got == pytest.approx((1 + P) * N * (1 / (PCIE3 * TLP_EFFICIENCY) + 1 / COPY_RATE) + 1e-3)


def test_one_gpu_stages_nothing_and_a_free_host_path_is_the_wire():
    for staging in ("host", "cuda-aware"):
        assert staged_seconds("allreduce", N, 0.25, 1, V100, staging) == 0.25
        assert staged_seconds("allreduce", N, 0.25, P, FREE, staging) == 0.25
        assert staged_seconds("allgather", N, 0.25, P, FREE, staging) == 0.25


def test_horovod_is_horovod_nccl_and_mpi_and_cpu_differ_only_by_their_staging():
    nccl, mpi, cpu = FRAMEWORKS["horovod-nccl"], FRAMEWORKS["horovod-mpi"], FRAMEWORKS["horovod-cpu"]
    assert dataclasses.replace(FRAMEWORKS["horovod"], name=nccl.name) == nccl and not nccl.staged
    assert dataclasses.replace(mpi, name=nccl.name, staging=None) == nccl and mpi.staging == "cuda-aware"
    assert dataclasses.replace(cpu, name=nccl.name, staging=None) == nccl and cpu.staging == "host"
    assert mpi.per_op == HOROVOD_OP
    with pytest.raises(ValueError, match="staging.*valid: cuda-aware, host"):
        Framework("x", 0.0, staging="gpu")


def _cluster(gbits=10):
    return sim.Cluster(8, 1, inter=protocols.tcp(gbits).link())


@pytest.mark.parametrize("framework", ["horovod-mpi", "horovod-cpu"])
@pytest.mark.parametrize("compress", [None, "topk(0.01)", "powersgd"])
def test_a_free_host_path_gives_horovod_nccl_and_a_real_one_is_slower(compress, framework):
    prof = sim.profile("resnet50", batch=64, device="v100")
    nccl = sim.iteration(prof, _cluster(), framework="horovod-nccl", compress=compress)
    free = sim.iteration(dataclasses.replace(prof, device=FREE), _cluster(), framework=framework, compress=compress)
    assert free.time == pytest.approx(nccl.time, rel=1e-12)
    staged = sim.iteration(prof, _cluster(), framework=framework, compress=compress).time
    # CUDA-aware Open MPI copies a small all-gather's fragments while the wire is busy: no slower
    assert staged > nccl.time if (framework, compress) != ("horovod-mpi", "topk(0.01)") else staged == nccl.time


def test_staging_needs_a_device_and_an_all_reduce():
    prof = dataclasses.replace(sim.profile("resnet50", batch=64, device="v100"), device=None)
    with pytest.raises(ValueError, match="framework='horovod-mpi' stages .* give device="):
        sim.iteration(prof, _cluster(), framework="horovod-mpi")
    assert sim.iteration(prof, _cluster(), framework="horovod-mpi", device="v100").time > 0
    with pytest.raises(ValueError, match="use arch='allreduce' \\(got arch='ps'\\)"):
        sim.iteration("resnet50", _cluster(), arch="ps", framework="horovod-mpi")


@pytest.mark.parametrize("framework", ["horovod-mpi", "horovod-cpu"])
def test_a_newer_host_link_stages_faster(framework):
    prof = sim.profile("resnet50", batch=64, device="v100")
    kw = dict(framework=framework, schedule="none")  # one message after backward: nothing else moves
    v100 = sim.iteration(prof, _cluster(25), **kw).time
    gen5 = sim.iteration(prof, _cluster(25), device=DEVICES["h100"], **kw).time
    assert gen5 < v100
