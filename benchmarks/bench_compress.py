"""Compressor benchmark: every registered compressor on one large fp32 tensor.

    python benchmarks/bench_compress.py            # 25M-element vector, and a 1024 x 1024 matrix
    python benchmarks/bench_compress.py --quick    # 1M elements
    python benchmarks/bench_compress.py --only qsgd rotated --threads 1

For each compressor (built with its default arguments from the registry, so compressors added
later appear by themselves; QSGD's Elias coding as an extra row): compress and decompress
throughput in GB/s of fp32 input (best of ``--repeats`` after one warm-up call, since the
first touch of fresh memory is slow in a VM), payload bytes, and the compression ratio
(input bytes / payload bytes). Compressors working on matrices (PowerSGD, ATOMO) and top-k
are also run on a 1024 x 1024 matrix. Stateful compressors get a fresh instance per timed
call, so LAQ is timed on a round it uploads (not a skip). A reference row times one
torch.topk plus one scatter, the speed target of top-k compress + decompress.

Target: the slowest compressor handles 25M elements (compress + decompress) in < 5 s.
"""
from __future__ import annotations

import argparse
import inspect
import time

import torch

from commlab.compress import COMPRESSORS, get

EXTRA = {"qsgd(coding='elias')": "qsgd(coding='elias')", "topk+ef": "topk+ef",
         "threshold(2.5)": "threshold(2.5)"}  # the default tau=1e-3 keeps nearly all of randn
MATRIX = ("powersgd", "atomo", "topk")
TARGET_S = 5.0


def specs(only):
    names = [n for n in COMPRESSORS.names() if not only or n in only]
    out = list(names)
    for label, spec in EXTRA.items():
        if not only or label.split("(")[0].split("+")[0] in only:
            out.append(spec)
    return out


def timed(spec, x, repeats):
    """(compress seconds, decompress seconds, payload) best of repeats after a warm-up."""
    best_c = best_d = float("inf")
    payload = None
    for i in range(repeats + 1):
        c = get(spec)  # fresh: no state carried between timed calls
        t0 = time.perf_counter()
        p = c.compress(x, key="bench")
        t1 = time.perf_counter()
        y = c.decompress(p)
        t2 = time.perf_counter()
        assert y.shape == x.shape and y.dtype == x.dtype
        if i:
            best_c, best_d = min(best_c, t1 - t0), min(best_d, t2 - t1)
        payload = p
    return best_c, best_d, payload


def table(title, header, rows):
    print(f"\n{title}")
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(x).rjust(w) for x, w in zip(row, widths)))


def run(x, names, repeats):
    rows, slowest = [], ("", 0.0)
    gb = x.numel() * 4 / 1e9
    for spec in names:
        try:
            tc, td, p = timed(spec, x, repeats)
        except (ValueError, TypeError, NotImplementedError) as e:
            rows.append([spec, "-", "-", "-", "-", "-", f"skipped: {str(e)[:60]}"])
            continue
        total = tc + td
        if total > slowest[1]:
            slowest = (spec, total)
        rows.append([spec, f"{gb / tc:.2f}", f"{gb / td:.2f}", f"{total:.2f}", f"{p.nbytes:,}",
                     f"{x.numel() * 4 / p.nbytes:.1f}x", f"{8 * p.nbytes / x.numel():.3f}"])
    return rows, slowest


def topk_reference(x, repeats, ratio=0.01):
    """Top-k's speed target as a row: one torch.topk of |x| plus one scatter into zeros, for
    top-k's default ratio (best of repeats after a warm-up)."""
    flat = x.reshape(-1)
    k = max(1, round(ratio * flat.numel()))
    best = float("inf")
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        idx = torch.topk(flat.abs(), k, sorted=False).indices
        torch.zeros_like(flat).scatter_(0, idx, flat[idx])
        if i:
            best = min(best, time.perf_counter() - t0)
    return ["ref: torch.topk+scatter", "-", "-", f"{best:.3f}", "-", "-", "-"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1M elements instead of 25M")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--only", nargs="*", default=None, help="registry names to run")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch intra-op threads (1 is steadier on a busy machine)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    n = 1_000_000 if a.quick else 25_000_000
    repeats = a.repeats or (3 if a.quick else 2)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    header = ["compressor", "compress GB/s", "decompress GB/s", "total s", "payload bytes", "ratio", "bits/coord"]
    x = torch.randn(n)
    rows, slowest = run(x, specs(a.only), repeats)
    if not a.only or "topk" in a.only:
        rows.append(topk_reference(x, repeats))
    table(f"Vector of {n:,} fp32 elements ({n * 4 / 1e6:.0f} MB); default arguments", header, rows)
    limit = TARGET_S * n / 25_000_000
    verdict = "meets" if slowest[1] < limit else "MISSES"
    print(f"\nslowest: {slowest[0]} {slowest[1]:.2f} s; target < {limit:.2f} s for {n:,} elements: {verdict}")
    mats = [s for s in MATRIX if s in COMPRESSORS.names() and (not a.only or s in a.only)]
    if mats:
        m = torch.randn(1024, 1024)
        rows, _ = run(m, mats, repeats)
        if "topk" in mats:
            rows.append(topk_reference(m, repeats))
        table("Matrix 1024 x 1024 fp32 (4 MB)", header, rows)
    print("\ndefaults: " + "; ".join(f"{s}{inspect.signature(COMPRESSORS.builders[s])}"
                                      for s in COMPRESSORS.names() if s in (a.only or COMPRESSORS.names())))


if __name__ == "__main__":
    main()
