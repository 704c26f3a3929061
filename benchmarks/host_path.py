"""The host path of a staged collective, measured here beside the constants the simulator assumes.

    python benchmarks/host_path.py [--mb 100] [--repeats 5]

``framework="horovod-cpu"`` (:mod:`commlab.sim.data_path`) charges one CPU core for Horovod's
fusion-buffer copies (``bytes / host_bandwidth``, the device's copy rate of one host core), and
it and ``"horovod-mpi"`` charge the ring's reduction (three bytes of memory traffic per byte
reduced, at the same rate) and the GPU's PCIe link for the copies to and from host memory. This
script times, on one thread of the machine it runs on: a copy into an existing buffer (the fusion
copy), a copy into a fresh buffer, and an in-place sum of a received block into local data
(``a += b``, MPI's reduction), over ``--mb`` megabytes of fp32, the median of ``--repeats`` calls
after one warm-up; and with a CUDA device, pinned copies down and up. It prints each rate beside
the rate the model charges on a V100 and the milliseconds each would take for ResNet-50's 102 MB.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from commlab.sim.data_path import TLP_EFFICIENCY
from commlab.sim.devices import DEVICES

RESNET50_BYTES = 25_557_032 * 4


def rate(fn, nbytes: float, repeats: int) -> float:
    """Bytes per second of ``fn`` moving ``nbytes``: the median of ``repeats`` timed calls."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return nbytes / statistics.median(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0, help="megabytes of fp32 per measurement (default 100)")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per measurement (default 5)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    n = int(args.mb * 1e6 / 4)
    a, b, out = torch.randn(n), torch.randn(n), torch.empty(n)
    nbytes = 4 * n
    v100 = DEVICES["v100"]  # the staged path's rates as the model charges them on GRACE's V100s
    core = v100.host_bandwidth
    rows = [("copy into a buffer", rate(lambda: out.copy_(a), nbytes, args.repeats), core),
            ("copy into a fresh buffer", rate(lambda: a.clone(), nbytes, args.repeats), core),
            ("reduce a += b (per byte reduced)", rate(lambda: a.add_(b), nbytes, args.repeats), core / 3)]
    if torch.cuda.is_available():
        pinned = torch.empty(n, pin_memory=True)
        gpu = a.cuda()
        assumed = v100.pcie * TLP_EFFICIENCY  # the V100's PCIe 3.0 link
        rows += [("PCIe down (pinned)", rate(lambda: pinned.copy_(gpu, non_blocking=True), nbytes, args.repeats),
                  assumed),
                 ("PCIe up (pinned)", rate(lambda: gpu.copy_(pinned, non_blocking=True), nbytes, args.repeats),
                  assumed)]
    print(f"one thread, {args.mb:g} MB fp32, median of {args.repeats}; torch {torch.__version__}")
    print(f"{'what':34s} {'measured GB/s':>14s} {'model GB/s':>11s} {'model ms / 102 MB':>18s} {'measured ms':>12s}")
    for name, measured, assumed in rows:
        print(f"{name:34s} {measured / 1e9:14.2f} {assumed / 1e9:11.2f} {RESNET50_BYTES / assumed * 1e3:18.1f} "
              f"{RESNET50_BYTES / measured * 1e3:12.1f}")


if __name__ == "__main__":
    main()
