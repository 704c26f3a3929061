"""A measured cost table: each compressor's encode and decode seconds against the tensor's size.

    python benchmarks/compress_costs.py --out costs.json                 # this CPU, one thread
    python benchmarks/compress_costs.py --device cuda --out costs.json   # a GPU

The simulator times a compressor from what it declares (memory passes and kernel launches of this
library's kernels, :mod:`commlab.compress.cost`). Another implementation of the same compressor
costs what it costs; this table is what one implementation measured on one device, and
``sim.iteration(..., compress_costs=table)`` charges it instead of the declaration.

For every registered compressor (default arguments) and each size in ``--sizes`` (fp32 values of
one random normal tensor), the median of ``--repeats`` timed calls after one warm-up, each call
between two ``torch.cuda.synchronize()`` on a GPU (``time.perf_counter`` around it); a fresh
instance per call, so stateful compressors (residuals, momentum) time a round they send. A size
whose first call takes longer than ``--cap`` seconds is timed once and the larger sizes skipped
(the table records where it stopped). The JSON::

    {"about": {"device": ..., "torch": ..., "repeats": ..., "measured": ...},
     "compressors": {"qsgd": {"numel": [...], "encode_s": [...], "decode_s": [...], "bytes": [...]}, ...}}
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from commlab.compress import COMPRESSORS, get

SIZES = (1 << 12, 1 << 16, 1 << 20, 1 << 22, 1 << 24, 25_557_032)  # the last: ResNet-50's parameters


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(spec: str, x: torch.Tensor, repeats: int):
    """(median encode seconds, median decode seconds, wire bytes) of ``spec`` on ``x``."""
    enc, dec, nbytes = [], [], 0
    for i in range(repeats + 1):
        c = get(spec)
        _sync(x.device)
        t0 = time.perf_counter()
        p = c.compress(x, key="costs")
        _sync(x.device)
        t1 = time.perf_counter()
        y = c.decompress(p)
        _sync(x.device)
        t2 = time.perf_counter()
        if y.shape != x.shape:
            raise AssertionError(f"{spec}: decoded shape {tuple(y.shape)} != {tuple(x.shape)}")
        if i:  # the first call warms up
            enc.append(t1 - t0)
            dec.append(t2 - t1)
        nbytes = p.nbytes
    return statistics.median(enc), statistics.median(dec), nbytes


def table(device: torch.device, sizes, repeats: int, cap: float, only=None) -> dict:
    out = {}
    for spec in COMPRESSORS.names():
        if only and spec not in only:
            continue
        row = {"numel": [], "encode_s": [], "decode_s": [], "bytes": []}
        for n in sizes:
            x = torch.randn(n, device=device, generator=None)
            t0 = time.perf_counter()
            try:
                e, d, b = timed(spec, x, repeats)
            except (ValueError, TypeError, NotImplementedError) as err:
                row["skipped"] = f"{n}: {type(err).__name__}: {str(err)[:80]}"
                break
            for k, v in zip(("numel", "encode_s", "decode_s", "bytes"), (n, e, d, b)):
                row[k].append(v)
            if (time.perf_counter() - t0) / (repeats + 1) > cap:
                row["stopped_after"] = n
                break
        out[spec] = row
        print(f"{spec:>12} " + " ".join(f"{n:>9,}: {1e3 * e:8.3f}+{1e3 * d:8.3f} ms"
                                        for n, e, d in zip(row["numel"], row["encode_s"], row["decode_s"])),
              flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--sizes", type=int, nargs="*", default=list(SIZES), help="fp32 values per tensor")
    ap.add_argument("--repeats", type=int, default=5, help="timed calls per size (median), after one warm-up")
    ap.add_argument("--cap", type=float, default=2.0, help="seconds per call above which larger sizes are skipped")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads on a CPU (default 1)")
    ap.add_argument("--only", nargs="*", default=None, help="registry names to run")
    ap.add_argument("--out", required=True, help="the JSON file to write")
    a = ap.parse_args()
    if a.device not in ("cpu", "cuda") or (a.device == "cuda" and not torch.cuda.is_available()):
        ap.error(f"--device {a.device!r} is not available here; valid: cpu"
                 + (", cuda" if torch.cuda.is_available() else " (no CUDA GPU is visible)"))
    device = torch.device(a.device)
    if device.type == "cpu":
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else \
        f"cpu ({torch.get_num_threads()} thread{'s' if torch.get_num_threads() > 1 else ''})"
    about = {"device": where, "torch": torch.__version__, "repeats": a.repeats,
             "measured": "median seconds of compress() and of decompress(), each between two device "
                         "synchronizations, on torch.randn fp32 tensors, this library's kernels"}
    result = {"about": about, "compressors": table(device, a.sizes, a.repeats, a.cap, a.only)}
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
