"""Compressor benchmark: every registered compressor beside a plain-torch reference.

    python benchmarks/bench_compress.py                    # 8M fp32 values, and a 1024 x 1024 matrix
    python benchmarks/bench_compress.py --numel 25000000   # any size (--quick: 1M)
    python benchmarks/bench_compress.py --only qsgd terngrad --threads 1
    python benchmarks/bench_compress.py --device cuda --numel 25000000   # on a GPU

For each compressor (built with its default arguments from the registry, so compressors added
later appear by themselves; a few variants as extra rows) and its reference, the time of
compress + decompress as GB/s of fp32 input. The reference (:data:`REFERENCES`) is what a
straightforward implementation does and sends: one obvious line of torch per step, int8/uint8
codes, int64 indices, fp32 values, no bit packing, no header. Ours and the reference run
interleaved in one process, best of ``--repeats`` rounds after a warm-up round, or of more
while a row has taken less than ``--budget`` seconds (a busy or virtual machine makes single
timings noisy), and the table gives their ratio (> 1: ours is faster)
and both wire sizes. Stateful compressors (momentum, residuals, shifts) get a fresh instance
per timed call, and their references fresh zero state, so LAQ is timed on a round it sends.
PowerSGD, ATOMO and top-k also run on a 1024 x 1024 matrix. With ``--device cuda`` the input,
ours and the references run on the GPU, each timing between two ``torch.cuda.synchronize()``.

Target: ours at least as fast as its reference while sending fewer bytes; and the slowest
compressor handles 25M values (compress + decompress) in < 5 s (scaled to ``--numel``).
"""
from __future__ import annotations

import argparse
import inspect
import math
import time

import torch

from commlab.measure.bench import table
from commlab.compress import COMPRESSORS, get

EXTRA = ("qsgd(coding='elias')", "topk+ef", "threshold(2.5)")  # default tau=1e-3 keeps nearly all of randn
MATRIX = ("powersgd", "atomo", "topk")
TARGET_S = 5.0


# ----------------------------------------------------------------------------- references
# Each takes the flat fp32 input x (or a matrix) and returns (tensors sent, decoded tensor).
def _buckets(x, b):  # rows of b values (the last one zero-padded)
    return x.view(-1, b) if x.numel() % b == 0 else torch.nn.functional.pad(x, (0, -x.numel() % b)).view(-1, b)


def ref_qsgd(x, s=16, b=512):
    v = _buckets(x, b)
    norms = v.norm(dim=1, keepdim=True)
    levels = (v.abs() * (s / norms) + torch.rand(v.shape, device=v.device)).floor()
    codes = (levels * torch.sign(v)).to(torch.int8)  # level and sign in one int8
    return [norms, codes], _qsgd_decode(norms, codes, s, x.numel())


def _qsgd_decode(norms, codes, s, d):
    return (codes.float() * (norms / s)).view(-1)[:d]


def ref_terngrad(x):
    s = x.abs().max()
    trits = (torch.sign(x) * (torch.rand(x.shape, device=x.device) < x.abs() / s)).to(torch.int8)
    return [s, trits], trits.float() * s


def ref_signsgd(x):
    signs = torch.sign(x).to(torch.int8)
    return [signs], signs.float()


def ref_signum(x, beta=0.9):
    m = torch.zeros_like(x).mul_(beta).add_(x, alpha=1 - beta)  # fresh state
    return ref_signsgd(m)


def ref_scaled_sign(x):
    scale, signs = x.abs().mean(), torch.sign(x).to(torch.int8)
    return [scale, signs], signs.float() * scale


def ref_onebit(x, b=512):
    v = _buckets(x, b)
    neg = v < 0
    mpos = torch.where(neg, 0, v).sum(1, keepdim=True) / (~neg).sum(1, keepdim=True).clamp(min=1)
    mneg = torch.where(neg, v, 0).sum(1, keepdim=True) / neg.sum(1, keepdim=True).clamp(min=1)
    signs = neg.to(torch.int8)
    return [mpos, mneg, signs], torch.where(signs.bool(), mneg, mpos).view(-1)[:x.numel()]


def ref_natural(x):
    m, e = torch.frexp(x)  # |x| = |m| 2^e, |m| in [0.5, 1): round 2^(e-1) up w.p. 2|m| - 1
    exp = (e - 1 + (torch.rand(x.shape, device=x.device) < 2 * m.abs() - 1)).to(torch.int8)
    signs = torch.sign(x).to(torch.int8)
    return [exp, signs], torch.ldexp(signs.float(), exp)


def ref_rotated(x, s=16, b=1024):
    h = torch.ones(1, 1, device=x.device)
    while h.shape[0] < b:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)])
    d = torch.randint(0, 2, (b,), device=x.device) * 2 - 1.0
    y = (_buckets(x, b) * d) @ h / b ** 0.5
    lo, hi = y.min(1, keepdim=True).values, y.max(1, keepdim=True).values
    q = ((y - lo) / (hi - lo) * s + torch.rand(y.shape, device=y.device)).floor().to(torch.uint8)
    yq = lo + q.float() * ((hi - lo) / s)
    return [lo, hi, q], ((yq @ h / b ** 0.5) * d).view(-1)[:x.numel()]


def ref_diana(x, alpha=None):
    h = torch.zeros_like(x)  # fresh shift
    sent, delta = ref_qsgd(x - h)  # the worker decodes its own message to move its shift
    alpha = alpha or 1 / (1 + min(512 / 16 ** 2, 512 ** 0.5 / 16))
    h.add_(delta, alpha=alpha)
    return sent, _qsgd_decode(*sent, 16, x.numel())  # the receiver decodes it too


def ref_laq(x, s=15):
    qhat = torch.zeros_like(x)  # fresh: nothing uploaded yet
    diff = x - qhat
    r = diff.abs().max()
    q = ((diff + r) / (2 * r / s) + 0.5).floor().to(torch.uint8)
    dq = q.float() * (2 * r / s) - r
    _ = dq.pow(2).sum() <= 3 * (diff - dq).pow(2).sum()  # the skip rule's two norms
    qhat += dq
    _ = (x - qhat).pow(2).sum()  # the error kept for the next round's rule
    return [r, q], q.float() * (2 * r / s) - r  # the receiver decodes


def _scatter(x, idx, val):
    return torch.zeros_like(x).scatter_(0, idx, val)


def ref_topk(x, ratio=0.01):
    flat = x.reshape(-1)
    idx = torch.topk(flat.abs(), max(1, round(ratio * flat.numel())), sorted=False).indices
    val = flat[idx]
    return [idx, val], _scatter(flat, idx, val).view(x.shape)


def ref_randk(x, ratio=0.01):
    k = max(1, round(ratio * x.numel()))
    idx = torch.randperm(x.numel(), device=x.device)[:k]
    val = x[idx] * (x.numel() / k)
    return [idx, val], _scatter(x, idx, val)


def ref_threshold(x, tau=1e-3):
    idx = (x.abs() > tau).nonzero().squeeze(1)
    val = x[idx]
    return [idx, val], _scatter(x, idx, val)


def ref_dgc(x, ratio=0.001, momentum=0.9):
    u, v = torch.zeros_like(x), torch.zeros_like(x)  # fresh state
    u.mul_(momentum).add_(x)
    v.add_(u)
    idx = torch.topk(v.abs(), max(1, round(ratio * x.numel())), sorted=False).indices
    val = v[idx]
    v[idx] = 0
    u[idx] = 0
    return [idx, val], _scatter(x, idx, val)


def _as_matrix(x):
    if x.dim() == 2:
        return x
    m = math.isqrt(x.numel() - 1) + 1
    return _buckets(x, -(-x.numel() // m))


def ref_powersgd(x, r=2):
    M = _as_matrix(x)
    q = torch.randn(M.shape[1], r, device=M.device)
    p = torch.linalg.qr(M @ q).Q
    q = M.T @ p
    approx = p @ q.T
    _ = M - approx  # the error kept for feedback
    return [p, q], approx.reshape(-1)[:x.numel()].view(x.shape)


def ref_atomo(x, s=2):
    A = x.view(512, -1) if x.dim() == 1 and x.numel() % 512 == 0 else _as_matrix(x)
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    p = (s * S / S.sum()).clamp(max=1)
    keep = torch.rand(S.shape, device=S.device) < p
    u, w = U[:, keep], Vh[keep] * (S[keep] / p[keep])[:, None]
    return [u, w], (u @ w).reshape(x.shape)


def with_ef(inner, decode):
    def ref(x):
        e = torch.zeros_like(x)  # fresh residual
        y = x + e
        sent, out = inner(y)  # the sender decodes its own message for the residual
        e = y - out
        return sent, decode(sent, x)  # the receiver decodes it too
    return ref


REFERENCES = {  # spec -> (what the reference does, function)
    "fp16": ("x.half(); .float()", lambda x: ([h := x.half()], h.float())),
    "bf16": ("x.bfloat16(); .float()", lambda x: ([h := x.bfloat16()], h.float())),
    "qsgd": ("bucket norms, int8 signed levels", ref_qsgd),
    "qsgd(coding='elias')": ("bucket norms, int8 signed levels", ref_qsgd),
    "terngrad": ("max |x|, int8 trits", ref_terngrad),
    "signsgd": ("int8 sign(x)", ref_signsgd),
    "signum": ("momentum, int8 sign", ref_signum),
    "scaled_sign": ("mean |x|, int8 sign(x)", ref_scaled_sign),
    "ef_signsgd": ("scaled sign + residual", with_ef(ref_scaled_sign, lambda sent, x: sent[1].float() * sent[0])),
    "onebit": ("2 fp32 means/bucket, int8 signs", ref_onebit),
    "natural": ("frexp; int8 exponent, int8 sign", ref_natural),
    "rotated": ("x D @ H, uint8 levels", ref_rotated),
    "diana": ("qsgd ref of x - h, shift", ref_diana),
    "laq": ("max |x|, uint8 levels", ref_laq),
    "topk": ("torch.topk, int64 idx, fp32", ref_topk),
    "topk+ef": ("topk ref + residual", with_ef(ref_topk, lambda sent, x: _scatter(x, *sent))),
    "gtopk": ("torch.topk, int64 idx, fp32", ref_topk),
    "randk": ("randperm, int64 idx, fp32", ref_randk),
    "threshold": ("nonzero, int64 idx, fp32", ref_threshold),
    "threshold(2.5)": ("nonzero, int64 idx, fp32", lambda x: ref_threshold(x, 2.5)),
    "dgc": ("momentum, torch.topk, int64 idx", ref_dgc),
    "powersgd": ("M @ Q, qr, M.T @ P, P @ Q.T", ref_powersgd),
    "atomo": ("torch.linalg.svd, sample", ref_atomo),
}


# ----------------------------------------------------------------------------- timing
def specs(only):
    names = [n for n in COMPRESSORS.names() if not only or n in only]
    return names + [s for s in EXTRA if not only or s.split("(")[0].split("+")[0] in only]


def _sync(x):
    if x.device.type == "cuda":
        torch.cuda.synchronize(x.device)


def compare(spec, x, repeats, budget):
    """(our seconds, our bytes, reference seconds or None, reference bytes): the best of
    ``repeats`` rounds after a warm-up, or of as many as fit in ``budget`` seconds, ours and the
    reference taking turns in every round. Ours is a fresh instance each time (no state)."""
    ref = REFERENCES.get(spec)
    best, ref_best, ref_bytes, start, i = math.inf, math.inf, 0, time.perf_counter(), 0
    while i <= repeats or time.perf_counter() - start < budget:
        c = get(spec)
        _sync(x)
        t0 = time.perf_counter()
        p = c.compress(x, key="bench")
        y = c.decompress(p)
        _sync(x)
        best = min(best, time.perf_counter() - t0) if i else best
        assert y.shape == x.shape and y.dtype == x.dtype
        if ref is not None:
            t0 = time.perf_counter()
            sent, _ = ref[1](x)
            _sync(x)
            ref_best = min(ref_best, time.perf_counter() - t0) if i else ref_best
            ref_bytes = sum(t.numel() * t.element_size() for t in sent)
        i += 1
    return best, p.nbytes, (ref_best if ref else None), ref_bytes




HEADER = ["compressor", "ours GB/s", "ref GB/s", "ours/ref", "ours bytes", "ref bytes", "ref/ours", "bits/coord",
          "reference"]


def run(x, names, repeats, budget):
    rows, slowest = [], ("", 0.0)
    gb = x.numel() * 4 / 1e9
    for spec in names:
        try:
            t, nb, rt, rb = compare(spec, x, repeats, budget)
        except (ValueError, TypeError, NotImplementedError) as e:
            rows.append([spec] + ["-"] * 7 + [f"skipped: {str(e)[:60]}"])
            continue
        if t > slowest[1]:
            slowest = (spec, t)
        ref = REFERENCES.get(spec, ("none",))[0]
        rows.append([spec, f"{gb / t:.2f}", "-" if rt is None else f"{gb / rt:.2f}",
                     "-" if rt is None else f"{rt / t:.2f}", f"{nb:,}", f"{rb:,}" if rb else "-",
                     f"{rb / nb:.1f}x" if rb else "-", f"{8 * nb / x.numel():.3f}", ref])
    return rows, slowest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--numel", type=int, default=8_000_000, help="fp32 values in the vector (default 8M)")
    ap.add_argument("--quick", action="store_true", help="1M values")
    ap.add_argument("--repeats", type=int, default=5, help="timed rounds at least (after a warm-up)")
    ap.add_argument("--budget", type=float, default=2.0, help="more rounds while a row has taken less (s)")
    ap.add_argument("--only", nargs="*", default=None, help="registry names to run")
    ap.add_argument("--device", default="cpu", help="where the tensors live: cpu (default) or cuda")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch intra-op threads (1 is steadier on a busy machine)")
    a = ap.parse_args()
    if a.device not in ("cpu", "cuda") or (a.device == "cuda" and not torch.cuda.is_available()):
        ap.error(f"--device {a.device!r} is not available here; valid: cpu"
                 + (", cuda" if torch.cuda.is_available() else " (no CUDA GPU is visible)"))
    if a.threads:
        torch.set_num_threads(a.threads)
    n = 1_000_000 if a.quick else a.numel
    torch.manual_seed(0)
    where = torch.cuda.get_device_name() if a.device == "cuda" else f"{torch.get_num_threads()} CPU threads"
    print(f"torch {torch.__version__}, {where}, best of >= {a.repeats} rounds "
          f"(more within {a.budget:g} s; ours and reference take turns)\nGB/s = fp32 input bytes / "
          f"(compress + decompress seconds); ours/ref = reference seconds / ours (> 1: ours faster)")
    x = torch.randn(n, device=a.device)
    rows, slowest = run(x, specs(a.only), a.repeats, a.budget)
    table(f"Vector of {n:,} fp32 values ({n * 4 / 1e6:.0f} MB); default arguments", HEADER, rows, last_left=True)
    limit = TARGET_S * n / 25_000_000
    verdict = "meets" if slowest[1] < limit else "MISSES"
    print(f"\nslowest: {slowest[0]} {slowest[1]:.2f} s; target < {limit:.2f} s for {n:,} values: {verdict}")
    mats = [s for s in MATRIX if s in COMPRESSORS.names() and (not a.only or s in a.only)]
    if mats:
        rows, _ = run(torch.randn(1024, 1024, device=a.device), mats, a.repeats, a.budget)
        table("Matrix 1024 x 1024 fp32 (4 MB)", HEADER, rows, last_left=True)
    print("\ndefaults: " + "; ".join(f"{s}{inspect.signature(COMPRESSORS.builders[s])}"
                                      for s in COMPRESSORS.names() if s in (a.only or COMPRESSORS.names())))


if __name__ == "__main__":
    main()
