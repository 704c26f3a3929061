"""GRACE's TensorFlow compressors' arithmetic, counted from its code and timed on a device.

This library's compressors declare what their own kernels do (:mod:`commlab.compress.cost`). The
runs of :mod:`commlab.sim.grace` ran GRACE's TensorFlow compressors instead (Xu et al., ICDCS 2021;
sands-lab/grace, ``grace_dl/tensorflow``), and an implementation costs what it costs.
:class:`GraceCosts` declares theirs the same way, one :class:`~commlab.compress.cost.KernelWork` term
per TensorFlow operation that launches a GPU kernel, read off their code and nothing measured:

* **no checks**: GRACE never asks whether a gradient is finite, where this library sums every
  tensor and waits for the answer (one host round trip per tensor);
* **host round trips where TensorFlow needs a value on the host**: the one-argument ``tf.where``
  and ``tf.boolean_mask`` (the output's size; the three-argument ``tf.where`` is an elementwise
  select), and DGC's ``tf.while_loop`` and ``tf.cond`` on a count (the predicate), as their
  kernels require;
* **one byte per sign or level**: the casts and the arithmetic of ``x >= 0`` (1-bit SGD: ``x < 0``),
  ``tf.cast(s) * 2 - 1``, ``tf.cast(level, tf.int8)``, no bit packing;
* **decoding an all-gather** (GRACE's ``Allgather`` communicator): per rank, a slice of the
  gathered buffer and the compressor's ``decompress``, then ``aggregate`` (``tf.math.add_n`` and
  the division by the workers, or the compressor's own majority vote); an all-reduce divides by
  the workers and decompresses once;
* **memory**: the residual (``ResidualMemory``) adds it before compressing, and after, decompresses
  its own payload again to keep ``tensor - decompressed``; DGC's momentum and masks, EF-signSGD's
  and PowerSGD's own, as their memory classes do;
* **PowerSGD** on TensorFlow's layout of a kernel (``layout="tensorflow"``,
  :mod:`commlab.compress.matrix`), rank 1: a QR of Q and of P per matrix, three products, the
  momentum GRACE updates twice, once in its memory's update and once in the final decompress.
  TensorFlow (1.14 in GRACE's environment of 2020, 1.15 in 2021's) registers ``tf.linalg.qr``'s
  GPU kernel with its input and outputs in host memory (``qr_op_float.cc``: the cuSOLVER kernel was
  disabled in 2018 for a bug, tensorflow/tensorflow issue 20099), so each QR is a round trip: the
  factor down to the host, Eigen's Householder QR on a core, Q back up (:func:`host_qr`). Even 1x1
  kernels, which this library would send raw, go through it.

Grappler's constant folding drops GRACE's multiplications by 1.0; common subexpressions (the
same ``abs``, the same ``tf.where``) count once. Each kernel is charged the device's ``launch``;
TensorFlow's executor costs some microseconds per operation too, and we take it as the same as
PyTorch's eager operator (an assumption, stated). Memory traffic is in passes over the tensor's
fp32 values, as the declarations count it.

Use: ``sim.iteration(..., compress_costs=GraceCosts())`` (the compressor's name says which
GRACE compressor it stands for, :data:`NAMES`); :func:`commlab.sim.grace.compare` does so by default.
"""
from __future__ import annotations

import math
from statistics import NormalDist

from ..compress.cost import NONE, KernelWork
from ..compress.matrix import tf_order
from ..compress.threshold import KEPT

QR_HOST_PASSES = 6  # a thin QR on the host: the matrix down, its norm, the scaling, Q formed, Q up (counted)
SYNC = KernelWork(syncs=1)
MAX_ROUNDS = 20  # GRACE's DGC: tf.while_loop(..., maximum_iterations=20)


def op(passes: float = 0.0, select: float = 0.0, flops: float = 0.0) -> KernelWork:
    """One TensorFlow operation: one kernel moving ``passes`` over the tensor."""
    return KernelWork(passes, 1, select, 0, flops)


def _where(f: float) -> KernelWork:
    """``tf.where(mask)``: count the true entries, learn the count on the host, write int64 indices."""
    return op(0.25) + SYNC + op(0.25 + 2 * f)


def _sparse(f: float):
    """Top-k's, DGC's and threshold's payload: int32 values and indices concatenated (2 f of d)."""
    decode = op(4 * f) + op(1) + op(3 * f)  # split, scatter_nd's zeros and its scatter
    return op(4 * f), decode  # concat; decode


def topk(d, f, c):
    concat, decode = _sparse(f)
    return op(2) + op(select=d) + op(3 * f) + concat, decode, 4 * f  # abs, top_k, gather


def threshold(d, f, c):
    concat, decode = _sparse(f)
    # abs, >, boolean_mask's where and gather (the second tf.where is the same node), int64 -> int32
    return op(2) + op(1.25) + _where(f) + op(3 * f) + op(3 * f) + concat, decode, 4 * f


def dgc_rounds(d: int, ratio: float) -> int:
    """How many times GRACE's DGC moves its threshold (``tf.while_loop``, at most 20) on a tensor of d
    Gaussian entries, in expectation: the threshold is the largest k' of a 1% sample (k' = 1% of the
    ratio's k, at least 1), then times 1.25 while more than 1.25 k pass and times 0.9 while fewer than
    0.8 k do. A small tensor's sample of a few entries misses by far, and each round costs a trip to
    the host."""
    k, sample = max(1, int(d * ratio)), max(1, int(d * 0.01))
    top = max(1, int(d * ratio * 0.01))
    thr = NormalDist().inv_cdf(1 - top / (sample + 1) / 2)  # |x|'s quantile: the top'th of the sample
    for rounds in range(MAX_ROUNDS):
        passing = d * math.erfc(thr / math.sqrt(2))  # entries with |x| > thr
        if 0.8 * k <= passing <= 1.25 * k:
            return rounds
        thr *= 1.25 if passing > 1.25 * k else 0.9
    return MAX_ROUNDS


def dgc(d, f, c):
    concat, decode = _sparse(f)
    s = max(1, int(d * 0.01)) / d  # GRACE samples 1% of the entries
    sample = op(s) + op(3 * s) + op(2 * s) + op(select=s * d) + op()  # draw, gather, abs, top_k, min
    count = op(1.25) + op(1.25) + op(1)  # |x| > thr, cast, sum (the |x| is the sample's node reused)
    # each round: the loop's predicate and its tf.cond on the host, a new threshold, and a count
    rounds = (SYNC + SYNC + op() + count).repeat(dgc_rounds(d, c.ratio))
    loop = SYNC + SYNC  # the predicate that ends the loop, the final tf.cond: both on the host
    encode = op(2) + sample + count + rounds + loop + op(1.25) + _where(f) + op(3 * f) + op(3 * f) + concat
    momentum = op(2) + op(3) + op(2) + op(3) + op(2) + op(1) + op(3)  # DgcMemory.compensate
    masks = op(0.5) + op(1.25) + op(3) + op(2) + op(3) + op(2)  # DgcMemory.update
    return momentum + encode + masks, decode, 4 * f


def randk(d, f, c):
    # stateless draw of k indices, gather; all-reduced: divided by the workers, scatter_nd
    return op(f) + op(3 * f), op(2 * f) + op(1) + op(3 * f), None


def qsgd(d, f, c):
    width = 1 if c.levels < 128 else 2  # GRACE's int8, else 16 bits
    norm = op(3) + op(1) + op()  # x * x, sum, sqrt
    encode = (norm + op(2) + op() + op(2) + op(2) + op(1) + op(3) + op(2.25) + op(1.25) + op(3) + op(2) + op(3)
              + op(1 + width / 4))  # |x|, s/norm, scaled, floor, uniform, frac, <, cast, +, sign, *, to int
    return encode, op(width / 4 + 1) + op() + op(2), width / 2  # cast, norm / s, *


def terngrad(d, f, c):
    std = op(1) + op(3) + op(2) + op(1) + op()  # mean, minus it, square, mean, sqrt
    clip = op() + op() + op(3) + op(3)  # -c std, c std, minimum, maximum
    draw = op(1) + op(2)  # uniform in [0, 1), times the scale
    encode = (std + clip + op(2) + op(1) + op(1) + op(2) + op(2) + draw + op(2.25) + op(2) + op(3.25) + op(2)
              + op(1.25))  # |g|, max, zeros, |g|, sign, <, sign * scale, where, sign, to int8
    return encode, op(1.25) + op(2), 0.5


def natural(d, f, c):
    fields = op(2) + op(2) + op(2)  # sign, exponent and mantissa masks
    encode = (fields + op(1) + op(2.25) + op(2) + op(3.25) + op(2) + op(2) + op(2) + op(2) + op(2) + op(3)
              + op(1.25))  # uniform, >, exp + 1, where, min, max, >> 23, sign >> 24, - 18, |, to uint8
    decode = (op(0.5) + op(0.5) + op(1.25) + op(2) + op(2) + op(3.25) + op(1.25) + op(1.25) + op(3))
    return encode, decode, 0.5  # >127, & 127, +18 to int32, << 23, negate, where, >= 1, cast, *


SIGNS = op(2.25) + op(1.25) + op(2) + op(2)  # decode one payload of bools: cast, * 2, - 1


def signsgd(d, f, c):
    return op(1.25), SIGNS, 0.5


def signum(d, f, c):
    return op(2) + op(2) + op(3) + op(2) + op(1.25), SIGNS, 0.5  # (1-b) g, b m, +, assign, >= 0


def scaled_sign(d, f, c):
    return op(1.25) + op(2) + op(1), SIGNS + op(2), 0.5  # >= 0, |x|, mean; decode: times the mean


def onebit(d, f, c):
    half = _where(0.5) + op(1.5) + op(1) + op(1.25) + op(1) + op() + op()  # boolean_mask, sums, count, mean
    encode = op(1.25) + half + op(0.5) + half + op()  # x < 0, the negatives' mean, not, the others', concat
    return encode, op() + op(1.25) + op(2) + op(2) + op(2) + op(3), 0.5  # split, cast, *, 1 -, *, +


def host_qr(rows: int, d: int) -> KernelWork:
    """``tf.linalg.qr`` of a rows x 1 matrix in TensorFlow 1.14 and 1.15: a host round trip, and
    :data:`QR_HOST_PASSES` passes of the matrix through host memory (in passes over d)."""
    return SYNC + KernelWork(host=QR_HOST_PASSES * rows / d)


def powersgd(d, f, c, shape=None):
    shape = tuple(shape or (d,))
    if len(shape) < 2:  # sent whole: all-reduced and divided by the workers
        return NONE, op(2), None
    n = shape[tf_order(len(shape))[0]]  # the rows of tf.reshape(kernel, [shape[0], -1]) in TensorFlow's layout
    m = d // n
    product, small = 2 * n * m, (n + m) / d
    encode = (op(3) + host_qr(m, d) + op(1, flops=product) + op(small) + host_qr(n, d) + op(1, flops=product)
              + op(small) + op(small))  # + residual, QR(Q), M Q, / N, QR(P), M^T P, / N, assign Q
    decompress = op(1, flops=product) + op(2) + op(2) + op(3) + op(2) + op(3)  # P Q^T, momentum, assign, +
    return encode + decompress + op(3) + op(2), decompress, None  # the memory's update: its own decompress


RESIDUAL = op(3), op(3) + op(2)  # ResidualMemory: + residual before; tensor - decompressed, assign after
EF_SIGN = op(2) + op(3), op(3) + op(2)  # EFSignSGDMemory: lr g + residual before, the same after
NAMES = {"topk": topk, "threshold": threshold, "dgc": dgc, "randk": randk, "qsgd": qsgd, "terngrad": terngrad,
         "natural": natural, "signsgd": signsgd, "signum": signum, "scaled_sign": scaled_sign, "onebit": onebit,
         "powersgd": powersgd}
MAJORITY = ("signsgd", "signum")  # GRACE's aggregate: sum, >= 0, cast, * 2 - 1, then / N


def _kept(c, d: int) -> float:
    """The fraction of entries a sparsifier sends (threshold: the 1% its declaration assumes)."""
    if c.name == "threshold":
        return c.kept_count((d,), KEPT) / d
    ratio = getattr(c, "ratio", None)
    return max(1, int(d * ratio)) / d if ratio else 1.0


class GraceCosts:
    """Encode and decode seconds of GRACE's TensorFlow compressors on a device (module doc), in
    the place of a measured :class:`~commlab.sim.cost_table.CostTable`: ``entry`` and ``timer``."""

    def __init__(self, device=None):
        self.device = device
        self.origin = "GRACE's TensorFlow compressors"

    def entry(self, name: str) -> tuple[str, str]:
        """(GRACE's compressor for ours named ``name``, a note); ValueError if GRACE has none."""
        inner, _, wrapper = name.partition("+")
        if inner not in NAMES or wrapper not in ("", "ef"):
            raise ValueError(f"{self.origin} have no counterpart of {name!r}; they have {', '.join(NAMES)} "
                             "(each alone or with +ef)")
        return inner, ""

    def work(self, compressor, shape, workers: int) -> tuple[KernelWork, KernelWork]:
        """(encode, decode) work of one tensor of ``shape`` among ``workers`` ranks."""
        inner, _ = self.entry(compressor.name)
        base = compressor.inner if compressor.name.endswith("+ef") else compressor
        d = max(1, math.prod(shape))
        f = _kept(base, d)
        args = (d, f, base, shape) if inner == "powersgd" else (d, f, base)
        encode, decode, gathered = NAMES[inner](*args)
        if compressor.name.endswith("+ef"):  # the memory decompresses its own payload again
            before, after = EF_SIGN if inner == "scaled_sign" else RESIDUAL
            encode = before + encode + decode + after
        if gathered is None:  # all-reduced (random-k's values, PowerSGD's factors)
            return encode, decode
        aggregate = op(workers + 1) + op(2)  # add_n, / N
        if inner in MAJORITY:
            aggregate += op(1.25) + op(1.25) + op(2) + op(2)
        if inner == "scaled_sign":
            aggregate += op(2)  # EF-signSGD divides by its learning rate
        return encode, (op(gathered) + decode).repeat(workers) + aggregate

    def timer(self, device=None):
        """``timer(compressor, shape, workers) -> (encode s, decode s)`` for :mod:`commlab.sim.compression`."""
        dev = device or self.device
        if dev is None:
            raise ValueError(f"{self.origin} are timed on a device: give GraceCosts(device) or device= (a name of "
                             "sim.DEVICES or a sim.Device)")

        def timer(compressor, shape, workers):
            encode, decode = self.work(compressor, tuple(shape), workers)
            d = max(1, math.prod(shape))
            return dev.work_seconds(encode, d), dev.work_seconds(decode, d)
        timer.source = f"counted from {self.origin}' code, timed on {dev.name}"
        return timer
