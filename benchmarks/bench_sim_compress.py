"""The simulator's compression model against measurement, and what it predicts for GPU clusters.

    python benchmarks/bench_sim_compress.py                 # all three tables
    python benchmarks/bench_sim_compress.py --numel 1000000 --only topk qsgd
    python benchmarks/bench_sim_compress.py --device cuda   # table 1 on the GPU (model: --model-device)

1. **Device model against this machine.** For every registered compressor (default arguments, a
   few variants), one encode and one decode of a flat fp32 tensor (``compress`` then
   ``decompress``; ``summable`` then ``from_summed`` for compressors that aggregate by summing),
   measured (best of ``--repeats`` after a warm-up, one torch thread, the thread's CPU time; on a
   GPU between two synchronizations) beside what :meth:`commlab.sim.devices.Device.work_seconds`
   predicts from the compressor's declared :class:`~commlab.compress.cost.Cost` on the named device
   (``cpu``: this project's CPU, one thread).
2. **Device model against the GPUs we measured.** What this benchmark and ``bench_compress.py
   --device cuda`` recorded on an NVIDIA H200 (GB/s of fp32 input, 25M values, torch 2.11) and on
   an NVIDIA H100 (table 1 of this benchmark with ``--device cuda --numel 25000000``, torch
   2.11, 2026-11-28; the model's constants were set before, from data sheets), beside the
   model's on ``sim.DEVICES["h200"]`` and ``sim.DEVICES["h100"]``.
3. **Predictions.** ResNet-50 and BERT-Base on 8 V100s (one per node) over TCP at 1, 10, 25 and
   100 Gb/s, Horovod compressing tensor by tensor: samples/s of each compressor and its speedup
   over no compression.
"""
from __future__ import annotations

import argparse
import math
import time

import torch

from commlab import compress, sim
from commlab.measure.bench import table

SPECS = ("fp16", "bf16", "qsgd", "terngrad", "signsgd", "signum", "scaled_sign", "ef_signsgd", "onebit",
         "natural", "rotated", "diana", "laq", "topk", "topk(0.01)+ef", "randk", "threshold", "dgc", "gtopk",
         "powersgd", "atomo")
MATRIX = ("powersgd", "atomo")  # low rank: timed on a 1024 x 1024 matrix
# bench_compress.py --device cuda on an H200, 25M fp32 values: GB/s of input for compress + decompress
RECORDED_H200 = {"signsgd": 307, "scaled_sign": 278, "ef_signsgd": 135, "signum": 231, "onebit": 139,
                 "terngrad": 154, "qsgd": 76, "diana": 49, "laq": 40, "natural": 106, "topk": 136, "gtopk": 137,
                 "dgc": 102, "randk": 166, "fp16": 562, "bf16": 562, "threshold": 135}
# this benchmark's table 1 with --device cuda --numel 25000000 on an H100: measured ms per encode + decode
# (PowerSGD and ATOMO on a 1024 x 1024 matrix)
RECORDED_H100_MS = {"fp16": 0.286, "bf16": 0.285, "qsgd": 1.73, "terngrad": 0.78, "signsgd": 0.359,
                    "signum": 0.479, "scaled_sign": 0.422, "ef_signsgd": 0.884, "onebit": 0.824, "natural": 1.16,
                    "rotated": 1540, "diana": 2.57, "laq": 3.21, "topk": 0.82, "topk(0.01)+ef": 1.22,
                    "randk": 0.58, "threshold": 0.929, "dgc": 1.17, "gtopk": 0.827, "powersgd": 0.414,
                    "atomo": 12.1}
PREDICT = ("fp16", "qsgd", "terngrad", "signsgd", "topk(0.01)", "topk(0.01)+ef", "randk(0.01)", "dgc",
           "powersgd(rank=4)")


def encode_decode(c, x):
    """One encode and one decode of x by compressor c, as its aggregation runs them."""
    if c.aggregation == "sum" and c.protocol is None:
        c.from_summed(c.summable(x, key=0), x, 1)
    else:
        c.decompress(c.compress(x, key=0))


def measured(spec, x, repeats: int) -> float:
    """Best seconds of :func:`encode_decode` on a fresh compressor each time."""
    cuda = x.device.type == "cuda"
    clock = time.perf_counter if cuda else time.thread_time
    best = float("inf")
    for i in range(repeats + 1):
        c = compress.get(spec)
        if cuda:
            torch.cuda.synchronize()
        t0 = clock()
        encode_decode(c, x)
        if cuda:
            torch.cuda.synchronize()
        if i:
            best = min(best, clock() - t0)
    return best


def modelled(spec, shape, device) -> float:
    """Seconds the device model gives for one encode and one decode."""
    c = compress.get(spec)
    cost, d = c.cost(shape), math.prod(shape)
    return device.work_seconds(cost.encode, d) + device.work_seconds(cost.decode, d)


def model_vs_measured(specs, numel, repeats, device, model_device):
    rows = []
    for spec in specs:
        shape = (1024, 1024) if spec.split("(")[0] in MATRIX else (numel,)
        x = torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(device)
        m, p = measured(spec, x, repeats), modelled(spec, shape, model_device)
        rows.append([spec, "x".join(map(str, shape)), f"{m * 1e3:.3g}", f"{p * 1e3:.3g}", f"{p / m:.2f}"])
    table(f"1. encode + decode on {device} (measured) against the model on sim.DEVICES[{model_device.name!r}]",
          ["compressor", "shape", "measured ms", "model ms", "model / measured"], rows)
    summary([float(r[-1]) for r in rows])
    return rows


def summary(ratios):
    """The median and range of model / measured."""
    ratios = sorted(ratios)
    print(f"model / measured: median {ratios[len(ratios) // 2]:.2f}, range {ratios[0]:.2f} to {ratios[-1]:.2f}, "
          f"within 2x in {sum(0.5 <= r <= 2 for r in ratios)} of {len(ratios)}")


def model_vs_recorded(specs):
    """The recorded GPU tables beside the model on the same GPU (25M values; matrices 1024 x 1024)."""
    n = 25_000_000
    h200_ms = {spec: 4 * n / (gbs * 1e9) * 1e3 for spec, gbs in RECORDED_H200.items()}
    for gpu, recorded in (("h200", h200_ms), ("h100", RECORDED_H100_MS)):
        dev, rows = sim.DEVICES[gpu], []
        for spec in specs:
            if spec in recorded:
                shape = (1024, 1024) if spec.split("(")[0] in MATRIX else (n,)
                model = modelled(spec, shape, dev) * 1e3
                rows.append([spec, "x".join(map(str, shape)), f"{recorded[spec]:.3g}", f"{model:.3g}",
                             f"{model / recorded[spec]:.2f}"])
        table(f"2. encode + decode on an {gpu.upper()}: recorded ms against the model on sim.DEVICES[{gpu!r}]",
              ["compressor", "shape", "measured ms", "model ms", "model / measured"], rows)
        if rows:
            summary([float(r[-1]) for r in rows])


def predictions(models=("resnet50", "bert-base"), links=("tcp-1GbE", "tcp-10GbE", "tcp-25GbE", "tcp-100GbE")):
    for name in models:
        prof = sim.profile(name, batch=64 if name == "resnet50" else 32, device="v100")
        rows = []
        for spec in (None, *PREDICT):
            row = [spec or "none"]
            for link in links:
                c = sim.Cluster(8, 1, inter=link)
                base = sim.iteration(prof, c, framework="horovod")
                it = sim.iteration(prof, c, compress=spec, framework="horovod")
                row.append(f"{it.throughput:.0f} ({base.time / it.time:.2f}x)")
            rows.append(row)
        table(f"3. {name}, batch {prof.batch}, 8 V100s (one per node), Horovod: samples/s (speedup over none)",
              ["compressor", *links], rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--numel", type=int, default=4_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--model-device", default=None, help="the sim.DEVICES entry to predict with (default: "
                                                          "cpu, or h100 with --device cuda)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    specs = tuple(args.only) if args.only else SPECS
    model_device = sim.get_device(args.model_device or ("cpu" if args.device == "cpu" else "h100"))
    model_vs_measured(specs, args.numel, args.repeats, torch.device(args.device), model_device)
    model_vs_recorded(specs)
    predictions()


if __name__ == "__main__":
    main()
