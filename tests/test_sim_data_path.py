"""sim.data_path: a collective staged through host memory, against its closed form, and
horovod-mpi against horovod-nccl when the host path is made free."""
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


def test_allgather_brings_every_payload_up_and_reduces_nothing():
    got = staged_seconds("allgather", N, 1e-3, P, V100)
    assert got == pytest.approx((1 + P) * N * (1 / (PCIE3 * TLP_EFFICIENCY) + 1 / COPY_RATE) + 1e-3)


def test_one_gpu_stages_nothing_and_a_free_host_path_is_the_wire():
    assert staged_seconds("allreduce", N, 0.25, 1, V100) == 0.25
    assert staged_seconds("allreduce", N, 0.25, P, FREE) == 0.25


def test_horovod_is_horovod_nccl_and_mpi_differs_only_by_its_staging():
    nccl, mpi = FRAMEWORKS["horovod-nccl"], FRAMEWORKS["horovod-mpi"]
    assert dataclasses.replace(FRAMEWORKS["horovod"], name=nccl.name) == nccl and not nccl.staged
    assert dataclasses.replace(mpi, name=nccl.name, staged=False) == nccl
    assert mpi.per_op == HOROVOD_OP


def _cluster(gbits=10):
    return sim.Cluster(8, 1, inter=protocols.tcp(gbits).link())


@pytest.mark.parametrize("compress", [None, "topk(0.01)", "powersgd"])
def test_a_free_host_path_gives_horovod_nccl_and_a_real_one_is_slower(compress):
    prof = sim.profile("resnet50", batch=64, device="v100")
    nccl = sim.iteration(prof, _cluster(), framework="horovod-nccl", compress=compress)
    free = sim.iteration(dataclasses.replace(prof, device=FREE), _cluster(), framework="horovod-mpi", compress=compress)
    assert free.time == pytest.approx(nccl.time, rel=1e-12)
    assert sim.iteration(prof, _cluster(), framework="horovod-mpi", compress=compress).time > nccl.time


def test_staging_needs_a_device_and_an_all_reduce():
    prof = dataclasses.replace(sim.profile("resnet50", batch=64, device="v100"), device=None)
    with pytest.raises(ValueError, match="framework='horovod-mpi' stages .* give device="):
        sim.iteration(prof, _cluster(), framework="horovod-mpi")
    assert sim.iteration(prof, _cluster(), framework="horovod-mpi", device="v100").time > 0
    with pytest.raises(ValueError, match="use arch='allreduce' \\(got arch='ps'\\)"):
        sim.iteration("resnet50", _cluster(), arch="ps", framework="horovod-mpi")


def test_a_newer_host_link_stages_faster():
    prof = sim.profile("resnet50", batch=64, device="v100")
    v100 = sim.iteration(prof, _cluster(25), framework="horovod-mpi").time
    gen5 = sim.iteration(prof, _cluster(25), framework="horovod-mpi", device=DEVICES["h100"]).time
    assert gen5 < v100
