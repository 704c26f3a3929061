"""What every compressor declares for a simulator (commlab.compress.cost): its payload bytes
against real payloads, its collectives against what commlab.arch.aggregate really sends, and its
GPU arithmetic against a count of the aten ops its encode and decode dispatch with the GPU's
paths forced (tests/cost_count.py); and the arithmetic of KernelWork itself."""
import math

import pytest
import torch

from commlab.arch import aggregate as agg
from commlab.compress import COMPRESSORS, get
from commlab.compress.cost import Cost, KernelWork
from commlab.compress.sparse import sparse_payload

from cost_count import count, encode_decode, gpu_paths

EXTRA = ["topk(0.01)+ef", "topk(0.01)+qsgd(levels=16)", "randk(0.01)+fp16", "threshold+natural", "qsgd(coding='elias')",
         "rotated(coding='packed')", "dgc(0.01, warmup_steps=3)", "qsgd(levels=300)", "onebit+ef", "fp16+ef",
         "signsgd+ef", "threshold(signs=True)", "powersgd(rank=4)", "qsgd(levels=4, bucket=1000)",
         "signsgd(coding='bytes')", "signum(coding='bytes')", "scaled_sign(coding='bytes')", "onebit(coding='bytes')",
         "ef_signsgd(coding='bytes')", "onebit(bucket=100, coding='bytes')+ef", "terngrad(coding='bytes')",
         "qsgd(levels=127, coding='bytes')", "qsgd(levels=300, coding='bytes')",
         "qsgd(levels=127, bucket=1099511627776, coding='bytes')",
         "powersgd(rank=1, layout='tensorflow')"]
SPECS = sorted(COMPRESSORS.names()) + EXTRA
SHAPES = [(37,), (70_001,), (256, 300), (64, 32, 3, 3)]
HOST_CODED = {"qsgd(coding='elias')", "rotated"}  # numpy entropy coding on the host, by design


def data(c, shape, seed=0):
    """(x, keywords of payload_bytes and cost) that make a data-dependent size exact: a threshold
    sees 1% of the entries far above tau and the rest below; Elias' QSGD one nonzero coordinate
    per bucket (levels s and 0, no randomness); Huffman's rotation all zeros (every level 0)."""
    g = torch.Generator().manual_seed(seed)
    d = math.prod(shape)
    x = torch.randn(shape, generator=g)
    base = getattr(c, "sparsifier", c.base)
    if base.name == "threshold":
        k = max(1, d // 100)
        x = (torch.rand(d, generator=g) - 0.5) * base.tau  # all below tau
        x[torch.randperm(d, generator=g)[:k]] = 2 * base.tau * torch.sign(torch.randn(k, generator=g))
        return x.view(shape), {"kept": k}
    if getattr(base, "coding", None) == "elias":
        b = base.bucket
        x = torch.zeros(d)
        x[::b] = torch.randn(len(range(0, d, b)), generator=g).abs() + 0.1
        counts = [0] * (base.levels + 1)
        counts[0], counts[base.levels] = d - len(range(0, d, b)), len(range(0, d, b))
        return x.view(shape), {"level_counts": counts}
    if getattr(base, "coding", None) == "huffman":
        return torch.zeros(shape), {"code_bits": -(-d // base.bucket) * base.bucket}
    return x, {}


# ----------------------------------------------------------------------------- KernelWork
def test_work_adds_scales_and_repeats():
    a, b = KernelWork(2, 1, select=10, syncs=1, flops=5, host=3), KernelWork(1.5, 2)
    assert a + b == KernelWork(3.5, 3, 10, 1, 5, 3) and sum([a, b]) == a + b and sum([], KernelWork()) == KernelWork()
    assert a * 0.5 == KernelWork(1.0, 1, 10, 1, 5, 1.5) == 0.5 * a  # relative terms scale, counts do not
    assert a.repeat(3) == KernelWork(6, 3, 30, 3, 15, 9)
    assert Cost(a, b).total == a + b


@pytest.mark.parametrize("spec", SPECS)
def test_combine_work_grows_linearly_in_n(spec):
    c = get(spec)
    w = [c.combine_work((70_001,), n) for n in (1, 2, 3, 8)]
    if c.wire((70_001,))[0][0] == "tree":  # gTop-k merges along a tree: log2 n merges
        assert w[0] == KernelWork() and w[3] == (w[1]).repeat(3)
        return
    step = [w[1].passes - w[0].passes, w[1].launches - w[0].launches, w[1].syncs - w[0].syncs]
    for n, wn in zip((1, 2, 3, 8), w):
        assert wn.passes == pytest.approx(w[0].passes + (n - 1) * step[0])
        assert (wn.launches, wn.syncs) == (w[0].launches + (n - 1) * step[1], w[0].syncs + (n - 1) * step[2])
    one = c.decompress_work((70_001,))  # each payload more costs at least its decode
    assert step[0] >= one.passes and step[1] >= one.launches > 0


# ----------------------------------------------------------------------------- bytes
@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_payload_bytes_are_the_payloads(spec, shape):
    c = get(spec)
    x, assumed = data(c, shape)
    for dtype in (torch.float32, torch.float16):
        c = get(spec)
        if getattr(c, "warmup_steps", 0):  # DGC: every step of the warm-up, and after it
            for step in range(c.warmup_steps + 2):
                assert c.compress(x.to(dtype), key=0).nbytes == c.payload_bytes(shape, dtype, step=step)
            assert c.payload_bytes(shape, dtype) == c.compress(x.to(dtype), key=0).nbytes
            continue
        assert c.compress(x.to(dtype), key=0).nbytes == c.payload_bytes(shape, dtype, **assumed), (spec, dtype)


def test_sizes_that_depend_on_the_round_or_the_data():
    x = torch.randn(5000, generator=torch.Generator().manual_seed(0))
    laq = get("laq")
    assert laq.compress(x).nbytes == laq.payload_bytes(x.shape)  # the first round sends
    p = laq.compress(x)  # the same gradient again: its innovation is small, it skips
    assert p.nbytes == laq.payload_bytes(x.shape, sends=False) == 18 + 1
    th = get("threshold(1.0)")
    kept = int((x.abs() > 1).sum())
    assert th.compress(x).nbytes == th.payload_bytes(x.shape, kept=kept) == th.payload_bytes(x.shape, kept=kept / 5000)
    assert th.payload_bytes(x.shape) == th.payload_bytes(x.shape, kept=50)  # the default: 1% of d
    with pytest.raises(ValueError, match="kept"):
        th.payload_bytes(x.shape, kept=1.5)
    # the default sizes of the entropy codes are expectations for Gaussian data: close to a real one
    big = torch.randn(1 << 18, generator=torch.Generator().manual_seed(1))
    for spec in ("qsgd(coding='elias')", "rotated"):
        c = get(spec)
        assert c.payload_bytes(big.shape) == pytest.approx(c.compress(big).nbytes, rel=0.03), spec


def sent(monkeypatch, c, x, rounds=1):
    """The collectives commlab.arch.aggregate runs for one tensor on one rank of a world of 1, as
    (collective, bytes) in order: all-reduces, payloads gathered, tree messages (of the last of
    ``rounds`` rounds)."""
    log = []

    def allreduce(comm, buf, *a, **k):
        log.append(("allreduce", buf.numel() * buf.element_size()))
        return buf

    def gather(comm, p, *a, **k):
        log.append(("allgather", p.nbytes))
        return [p]

    def tree(comm, idx, val, k, shape, dtype, *a):
        log.append(("tree", sparse_payload(idx, val, shape, dtype).nbytes))
        return idx, val

    class Comm:
        rank, world_size = 0, 1

        def all_reduce(self, t, op="sum"):
            log.append(("allreduce", t.numel() * t.element_size()))
            return t

    monkeypatch.setattr(agg, "allreduce", allreduce)
    monkeypatch.setattr(agg, "gather_payloads", gather)
    monkeypatch.setattr(agg, "gtopk_allreduce", tree)
    for _ in range(rounds):
        log.clear()
        agg.aggregate(Comm(), c, x, key=0)
    return tuple(log)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_wire_is_what_aggregate_sends(monkeypatch, spec, shape):
    c = get(spec)
    x, assumed = data(c, shape)
    for dtype in (torch.float32, torch.float16):
        wire = c.wire(shape, dtype)
        assert all(kind in ("allreduce", "allgather", "tree") for kind, _ in wire)
        got = sent(monkeypatch, get(spec), x.to(dtype), 1 + getattr(c, "warmup_steps", 0))  # DGC: after it
        if assumed:  # a data-dependent payload: the declared one at the size this x gives
            wire = tuple((k, c.payload_bytes(shape, dtype, **assumed) if k == "allgather" else n) for k, n in wire)
        assert got == wire, (spec, shape, dtype)


def test_known_collectives():
    shape = (256, 300)
    assert get("powersgd(rank=2)").wire(shape) == (("allreduce", 4 * 256 * 2), ("allreduce", 4 * 300 * 2))
    assert get("powersgd").wire((300,)) == (("allreduce", 4 * 300),)  # a small vector goes raw
    assert get("fp16").wire(shape) == (("allreduce", 2 * 256 * 300),)
    assert get("randk(0.01)+ef").wire(shape) == (("allreduce", 4 * 768),)
    # a 2-D header is 4 + 8 + 11 + 11 bytes
    assert get("terngrad").wire(shape) == (("allreduce", 4), ("allgather", 34 + 4 + 15360))
    assert get("gtopk(0.01)").wire((100_000,)) == (("tree", 26 + 1000 * 8),)
    assert get("signsgd").wire((80,)) == (("allgather", 4 + 4 + 11 + 10),)


# ----------------------------------------------------------------------------- arithmetic
# The band. Declarations are written by hand for the GPU, the count is what torch dispatches on
# CPU tensors: they differ by small kernels the count sees and a GPU fuses or skips (scalar
# bookkeeping, a cached table) and by GPU-only work the count cannot see (the QR's and
# eigendecomposition's kernels, a status check). So: launches within a factor 1.5, give or take
# 3; passes, the selection and the flops within a factor 1.5; syncs within 2.
LARGE = [(1 << 20,), (1_000_003,)]  # whole groups of 8 and buckets, and neither
MATRICES = [(512, 1024), (128, 64, 3, 3)]  # the low-rank compressors: a layer's weight, a convolution's


def within(declared, counted, factor, slack=0.0):
    return counted / factor - slack <= declared <= counted * factor + slack


def check(label, spec, w, k):
    msg = f"{spec} {label}: declared {w}, counted {k}"
    assert within(w.launches, k.launches, 1.5, 3), msg
    assert within(w.passes, k.passes, 1.5), msg
    assert within(w.select, k.select, 1.5), msg
    assert abs(w.syncs - k.syncs) <= 2, msg
    assert within(w.flops, k.flops, 1.5), msg


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("which", [0, 1])
def test_declared_cost_matches_the_count(monkeypatch, spec, which):
    if spec in HOST_CODED or spec.startswith("rotated(") and "packed" not in spec:
        pytest.skip("entropy coding runs on numpy on the host, where the dispatcher sees nothing: declared "
                    "as host passes and syncs")
    gpu_paths(monkeypatch)
    c = get(spec)
    shape = (MATRICES if hasattr(c, "plan") else LARGE)[which]  # low rank: a matrix plan
    x, assumed = data(c, shape)
    declared = c.cost(shape, **assumed)
    enc, dec = encode_decode(c, x)
    d = math.prod(shape)
    if dec is None:  # gTop-k's aggregate: encode and decode together
        check("aggregate", spec, declared.total, count(enc, d))
        return
    check("encode", spec, declared.encode, count(enc, d))
    check("decode", spec, declared.decode, count(dec, d))
    if any(kind == "allgather" for kind, _ in c.wire(shape)):  # combine of 4 payloads
        p = c.compress(x, key=0)
        check("combine", spec, c.combine_work(shape, 4), count(lambda: c.combine([p] * 4, key=1), d))


def test_one_cost_by_hand():
    """top-k(0.01) of 2^20 fp32: the check (1 pass, 5 launches, 1 sync), |x| (2), the select over d
    reading x (1) and writing k values and int64 positions, the gather (16 bytes a value), the
    positions to int32 (12 bytes a value); decode zeros, positions back to int64, a scatter."""
    d = 1 << 20
    k = round(0.01 * d)
    cost = get("topk(0.01)").cost((d,))
    assert cost.encode == KernelWork(1 + 2 + 1 + 12 * k / (4 * d) + 16 * k / (4 * d) + 12 * k / (4 * d), 9, select=d, syncs=1)
    assert cost.decode == KernelWork(1 + 12 * k / (4 * d) + 16 * k / (4 * d), 3)
