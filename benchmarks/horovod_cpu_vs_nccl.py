"""The staged data path checked on a measurement outside GRACE's grid: Horovod's own table.

    python benchmarks/horovod_cpu_vs_nccl.py

Horovod's README, as merged in 2017 (horovod/horovod pull request 19), compared its two builds on
the same 64 GPUs over TCP: "TCP Horovod on CPU" (GPU tensors staged through host memory and
reduced by MPI) and "TCP Horovod on GPU (NCCL)", training Inception V3, ResNet-101 and VGG-16 at
64 images per GPU from single-GPU rates of 148.8, 136.0 and 149.6 images/s. The Horovod paper
(Sergeev and Del Balso, 2018) describes the servers as four Pascal GPUs each on a RoCE-capable
25 Gb/s network, so the 64 GPUs are taken as 16 nodes of 4 on PCIe 3.0, TCP at 25 Gb/s between
nodes; those settings, not stated with the table itself, are this script's assumption.

For ResNet-101 and VGG-16 (built here on the meta device; Inception V3 is not), the simulator
predicts each build's throughput with ``framework="horovod-cpu"`` and ``"horovod-nccl"``, the
profile scaled to the README's single-GPU rate, and the script prints the ratio CPU / NCCL
beside the README's. Nothing here is fitted to the table.
"""
from __future__ import annotations

import torch
from torch import nn

from commlab import sim
from commlab.models import bottleneck_resnet
from commlab.net import protocols

BATCH, NODES, PER_NODE = 64, 16, 4
README = {  # images/s on 64 GPUs: (single GPU, TCP Horovod on CPU, TCP Horovod on GPU with NCCL)
    "resnet101": (136.0, 3761.6, 7741.6),
    "vgg16": (149.6, 1462.6, 6084.2),
}


def vgg16() -> nn.Module:
    """VGG-16 (Simonyan and Zisserman 2015, configuration D): 13 convolutions and 3 dense layers."""
    with torch.device("meta"):
        layers: list[nn.Module] = []
        c_in = 3
        for c_out, convs in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
            for _ in range(convs):
                layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU()]
                c_in = c_out
            layers.append(nn.MaxPool2d(2))
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(512 * 7 * 7, 4096), nn.ReLU(),
                             nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1000))


def main() -> None:
    cluster = sim.Cluster(NODES, PER_NODE, intra="PCIe3", inter=protocols.tcp(25).link())
    print(f"{NODES} nodes x {PER_NODE} GPUs, PCIe 3.0 inside, TCP at 25 Gb/s between; batch {BATCH} per GPU")
    print(f"{'model':10s} {'params M':>8s} {'README CPU':>10s} {'NCCL':>7s} {'ratio':>6s}   "
          f"{'sim CPU':>8s} {'NCCL':>7s} {'ratio':>6s}")
    for name, build in (("resnet101", lambda: bottleneck_resnet((3, 4, 23, 3))), ("vgg16", vgg16)):
        single, cpu, nccl = README[name]
        model = build()
        # the V100 entry for its PCIe 3.0 x16 host link, which the Pascal GPUs had too; the step is rescaled below
        prof = sim.profile(model, device="v100", example_input=torch.zeros(BATCH, 3, 224, 224, device="meta"))
        prof = prof.scaled(BATCH / single)  # a Pascal GPU's step, from the README's single-GPU rate
        sim_cpu = sim.iteration(prof, cluster, framework="horovod-cpu", device="v100").throughput
        sim_nccl = sim.iteration(prof, cluster, framework="horovod-nccl", device="v100").throughput
        params = sum(p.numel() for p in model.parameters()) / 1e6
        print(f"{name:10s} {params:8.1f} {cpu:10.1f} {nccl:7.1f} {cpu / nccl:6.2f}   "
              f"{sim_cpu:8.1f} {sim_nccl:7.1f} {sim_cpu / sim_nccl:6.2f}")


if __name__ == "__main__":
    main()
