"""PowerSGD: warm-started power iteration converges to the best rank-r approximation, exact
for rank-r matrices, and the distributed round over Comm equals a single-process reference."""
import math

import pytest
import torch

from commlab.compress import get
from commlab.compress.base import header_bytes
from commlab.compress.matrix import matrix_shape, tf_order
from commlab.arch.aggregate import aggregate_all
from commlab.compress.powersgd import PowerSGD
from commlab.runtime import launch


def _low_rank(m, n, spectrum, seed=0):
    g = torch.Generator().manual_seed(seed)
    U = torch.linalg.qr(torch.randn(m, len(spectrum), generator=g, dtype=torch.float64)).Q
    V = torch.linalg.qr(torch.randn(n, len(spectrum), generator=g, dtype=torch.float64)).Q
    return U @ torch.diag(torch.tensor(spectrum, dtype=torch.float64)) @ V.T


def test_error_decreases_with_warm_start_iterations():
    A = _low_rank(60, 50, [10.0, 6.0, 3.0, 1.0, 0.5])
    best = (3.0 ** 2 + 1 + 0.25) ** 0.5
    c = PowerSGD(rank=2, error_feedback=False)
    errs = [float((A - c(A, key="a")).norm()) for _ in range(8)]
    assert all(b <= a + 1e-9 for a, b in zip(errs, errs[1:]))
    assert errs[0] > best + 0.1 and abs(errs[-1] - best) < 1e-3
    cold = PowerSGD(rank=2, error_feedback=False, warm_start=False)
    assert all(abs(float((A - cold(A)).norm()) - errs[0]) < 1e-9 for _ in range(3))  # no progress without it


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_exact_for_a_rank_r_matrix(dtype):
    for r in (1, 2, 4):
        A = _low_rank(40, 70, [5.0, 2.0, 1.0, 0.5][:r]).to(dtype)
        y = PowerSGD(rank=r)(A)
        assert float((A - y).norm() / A.norm()) < (1e-10 if dtype == torch.float64 else 1e-5)


def test_error_feedback_keeps_what_was_not_sent():
    g = torch.Generator().manual_seed(1)
    c = PowerSGD(rank=1)
    total_in, total_out = torch.zeros(20, 30, dtype=torch.float64), torch.zeros(20, 30, dtype=torch.float64)
    for _ in range(5):
        x = torch.randn(20, 30, generator=g, dtype=torch.float64)
        total_in += x
        total_out += c(x, key="w")
    assert torch.allclose(total_out + c.state["w"]["e"], total_in, atol=1e-10)


def test_matrix_view_rule():
    assert matrix_shape((8, 3, 3, 3)) == (8, 27)
    assert matrix_shape((1000,)) is None  # small 1-D: uncompressed
    assert matrix_shape((25_000_000,)) == (5000, 5000)
    assert matrix_shape((70_001,)) == (265, 265)  # ceil(sqrt), padded
    c = PowerSGD(rank=2)
    assert c.plan((1000,)) is None and c.plan((3, 4)) is None  # 2 (3 + 4) >= 12: no saving
    assert c.plan((30, 40)) == (30, 40, 2, False) and c.plan((40, 30)) == (40, 30, 2, False)
    x = torch.randn(7)
    p = c.compress(x)
    assert list(p.parts) == ["raw"] and torch.equal(c.decompress(p), x)


def _reference(grads_by_rank, rank, steps):
    """Single process: the algorithm on the stacked matrices, step by step."""
    n_ranks = len(grads_by_rank)
    M0 = grads_by_rank[0][0]
    m, n = M0.shape
    q = torch.randn(n, rank, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    errors = [torch.zeros(m, n, dtype=torch.float64) for _ in range(n_ranks)]
    outs = []
    for s in range(steps):
        Ms = [grads_by_rank[i][s] + errors[i] for i in range(n_ranks)]
        P = sum(M @ q for M in Ms) / n_ranks
        p_hat = torch.linalg.qr(P).Q
        q_locals = [M.T @ p_hat for M in Ms]
        q = sum(q_locals) / n_ranks
        errors = [M - p_hat @ ql.T for M, ql in zip(Ms, q_locals)]
        outs.append(p_hat @ q.T)
    return outs


def _grads(rank, steps=3):
    g = torch.Generator().manual_seed(10 + rank)
    return [torch.randn(24, 18, generator=g, dtype=torch.float64) for _ in range(steps)]


def _bias(rank, step):
    return torch.full((5,), float(rank + step), dtype=torch.float64)


def _distributed(comm, algorithm):
    c = PowerSGD(rank=2)
    out = []
    for step, g in enumerate(_grads(comm.rank)):
        mat, bias = aggregate_all(comm, c, [g, _bias(comm.rank, step)], ["w", "b"], algorithm)
        out.append((mat, bias))
    return out, comm.stats.bytes_sent


@pytest.mark.parametrize("runtime, algorithm", [("threads", "native"), ("threads", "ring"),
                                                ("threads", "tree"), ("gloo", "ring")])
def test_distributed_round_equals_single_process_reference(runtime, algorithm):
    n = 3
    results = launch(_distributed, n, runtime=runtime, args=(algorithm,), timeout=60)
    want = _reference([_grads(r) for r in range(n)], 2, 3)
    for out, _ in results:
        for step, (mat, bias) in enumerate(out):
            assert torch.allclose(mat, want[step], atol=1e-10)
            assert torch.allclose(bias, torch.full((5,), 1.0 + step, dtype=torch.float64))


def test_two_all_reduces_carry_only_the_factors():
    results = launch(_distributed, 2, args=("naive",))
    # naive all-reduce of n numbers: rank 1 sends them once to the root; 3 steps of
    # P (24 x 2) + bias (5), then Q (18 x 2), in fp64
    _, sent = results[1]
    assert sent == 3 * ((48 + 5) + 36) * 8


def test_summable_points_to_the_two_round_protocol():
    with pytest.raises(TypeError, match="two all-reduces"):
        PowerSGD().summable(torch.randn(4, 4))


def test_large_vector_is_viewed_as_a_near_square_matrix():
    x = torch.randn(1_000_000)
    c = PowerSGD(rank=4)
    p = c.compress(x)
    assert p["p"].numel() == 4 * 1000 and p["q"].numel() == 4 * 1000
    assert c.decompress(p).shape == x.shape


# ----------------------------------------------------------------------------- layout="tensorflow"
def _tf_low_rank(shape, r, seed=0):
    """A tensor of PyTorch's ``shape`` whose matrix view in TensorFlow's layout has rank r."""
    c = PowerSGD(rank=r, layout="tensorflow")
    tf_shape = c.view_shape(shape)
    if math.prod(shape) < 1 << 16 and len(shape) < 2:  # no matrix view: any tensor
        return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    m = tf_shape[0] if len(shape) >= 2 else 256
    M = _low_rank(m, math.prod(shape) // m, [3.0, 2.0, 1.0][:r], seed)
    if len(shape) < 2:
        return M.reshape(shape)
    back = tuple(tf_order(len(shape)).index(i) for i in range(len(shape)))
    return M.reshape(tf_shape).permute(back).contiguous()


def test_tensorflow_layout_views_the_tensor_as_tensorflow_holds_it():
    tf, pt = PowerSGD(rank=1, layout="tensorflow"), PowerSGD(rank=1)
    assert tf.view_shape((64, 32, 3, 3)) == (3, 3, 32, 64) and tf.view_shape((10, 300)) == (300, 10)
    assert tf.view_shape((8, 4, 5)) == (5, 4, 8) and tf.view_shape((37,)) == (37,)
    assert tf.plan((64, 32, 3, 3)) == (3, 3 * 32 * 64, 1, False)  # rows: the kernel's height
    assert pt.plan((64, 32, 3, 3)) == (64, 32 * 9, 1, False)
    assert tf.plan((10, 300)) == (300, 10, 1, False)  # a Linear's rows: its inputs
    assert tf.plan((64, 64, 1, 1)) is None and pt.plan((64, 64, 1, 1)) is not None  # 1 x 4096: raw
    assert tf.plan((70_001,)) == pt.plan((70_001,)) and tf.plan((37,)) is None  # 1-D as before


def test_tensorflow_layout_wire_and_payload_bytes():
    c = PowerSGD(rank=1, layout="tensorflow")
    assert c.wire((64, 64, 1, 1)) == (("allreduce", 4 * 64 * 64),)  # raw
    assert c.payload_bytes((64, 64, 1, 1)) == header_bytes(4, ["raw"]) + 4 * 64 * 64
    assert c.wire((64, 32, 3, 3)) == (("allreduce", 4 * 3), ("allreduce", 4 * 3 * 32 * 64))
    assert c.payload_bytes((64, 32, 3, 3)) == header_bytes(4, ["p", "q"]) + 4 * (3 + 3 * 32 * 64)
    assert c.wire((10, 300), torch.float16) == (("allreduce", 2 * 300), ("allreduce", 2 * 10))
    for shape in [(64, 32, 3, 3), (64, 64, 1, 1), (10, 300), (8, 4, 5), (37,)]:
        for dtype in (torch.float32, torch.float16):
            assert c.compress(torch.randn(shape).to(dtype)).nbytes == c.payload_bytes(shape, dtype), (shape, dtype)


@pytest.mark.parametrize("shape", [(16, 8, 3, 3), (8, 4, 5), (30, 40), (1 << 16,), (37,)], ids=str)
def test_tensorflow_layout_is_exact_for_a_low_rank_view(shape):
    r = 2
    x = _tf_low_rank(shape, r)
    c = PowerSGD(rank=r, layout="tensorflow")
    p = c.compress(x, key="w")
    assert ("raw" in p.parts) == (len(shape) == 1 and shape[0] < 1 << 16)
    y = c.decompress(p)
    assert y.shape == x.shape and y.dtype == x.dtype and y.is_contiguous()
    assert torch.allclose(y, x, atol=1e-10)
    assert torch.allclose(c(x, key="v"), x, atol=1e-10)
    bias = torch.arange(5.0, dtype=x.dtype)  # raw, in the first all-reduce
    out = PowerSGD(rank=r, layout="tensorflow").aggregate([x, bias], ["w", "b"], lambda buf: buf, 1)
    assert out[0].shape == x.shape and torch.allclose(out[0], x, atol=1e-10) and torch.equal(out[1], bias)
    if len(shape) > 2:  # PyTorch's view of the same tensor is not of rank r (a 2-D one is, transposed)
        assert not torch.allclose(PowerSGD(rank=r)(x), x, atol=1e-3)


def test_tensorflow_layout_error_feedback_keeps_what_was_not_sent():
    g = torch.Generator().manual_seed(2)
    c = PowerSGD(rank=1, layout="tensorflow")
    total_in, total_out = torch.zeros(6, 4, 3, 3, dtype=torch.float64), torch.zeros(6, 4, 3, 3, dtype=torch.float64)
    for _ in range(4):
        x = torch.randn(6, 4, 3, 3, generator=g, dtype=torch.float64)
        total_in += x
        total_out += c(x, key="w")
    residual = c.tensor(c.state["w"]["e"], (6, 4, 3, 3), torch.float64)  # kept as the 3 x 72 matrix
    assert c.state["w"]["e"].shape == (3, 72) and torch.allclose(total_out + residual, total_in, atol=1e-10)


def test_layout_is_checked_and_printed():
    with pytest.raises(ValueError, match=r"powersgd: unknown layout 'tf'; valid: pytorch, tensorflow"):
        PowerSGD(layout="tf")
    with pytest.raises(ValueError, match="unknown layout 'NCHW'"):
        get("powersgd(rank=1, layout='NCHW')")
    spec = "powersgd(rank=1, layout='tensorflow')"
    c = get(spec)
    assert isinstance(c, PowerSGD) and c.layout == "tensorflow" and c.rank == 1
    assert repr(c) == spec and repr(get(repr(c))) == spec
    assert repr(get("powersgd(rank=2)")) == "powersgd(rank=2)" and get("powersgd").layout == "pytorch"
    assert PowerSGD(2, True, True, 1 << 16, 0, "tensorflow").layout == "tensorflow"
