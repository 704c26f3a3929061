"""Asynchronous consensus ADMM (Zhang and Kwok 2014) on L2-regularized logistic regression.

Oracles: Newton's method on the whole problem (logistic_optimum), and synchronous ADMM
written out serially here."""
import contextlib

import pytest
import torch

from commlab.net.clock import Network
from commlab.runtime.errors import RankError
from commlab.sync import admm
from commlab.sync.admm import consensus_admm, logistic_objective, logistic_optimum

LAM, RHO, WORKERS = 1e-2, 0.03, 4


def _problem(n=400, d=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    w = torch.randn(d, generator=g, dtype=torch.float64)
    y = (torch.rand(n, generator=g, dtype=torch.float64) < torch.sigmoid(X @ w)).long()  # labels in {0, 1}
    return X, y


@contextlib.contextmanager
def _one_thread():
    """Solves of 10 x 10 systems gain nothing from intra-op threads, and on a busy 2-core
    machine their spin-waits made the main thread's Newton steps 20x slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def one_thread():
    with _one_thread():
        yield


X, Y = _problem()
Y_PM = 2.0 * Y - 1
with _one_thread():
    F_STAR = logistic_objective(X, Y_PM, LAM, logistic_optimum(X, Y, LAM))


def _straggler():
    """Compute at 1 GFLOP/s so that the local solves, not the 10GbE wire, set the pace;
    the last worker computes 4x slower."""
    return Network("10GbE", flops=1e9, slowdown={WORKERS - 1: 4.0})


def _rel(h):
    return (h.objective[-1] - F_STAR) / F_STAR


def test_oracle_is_optimal():
    w = logistic_optimum(X, Y, LAM)
    w.requires_grad_(True)
    loss = torch.nn.functional.softplus(-Y_PM * (X @ w)).mean() + 0.5 * LAM * w.dot(w)
    (g,) = torch.autograd.grad(loss, w)
    assert g.norm() < 1e-9
    assert abs(float(loss.detach()) - F_STAR) < 1e-14


def test_sync_admm_equals_serial_admm_and_converges():
    h = consensus_admm(X, Y, workers=WORKERS, rho=RHO, lam=LAM, iterations=30)
    assert h.contributors == [tuple(range(WORKERS))] * 30 and h.delay == [1] * 30
    # the same iterations written out serially (same shards, same inexact local solve)
    shards = [(X[i], Y_PM[i]) for i in admm.split_iid(len(X), WORKERS, 0)]
    d = X.shape[1]
    xs, lams, z = [torch.zeros(d, dtype=torch.float64) for _ in shards], [torch.zeros(d, dtype=torch.float64)
                                                                          for _ in shards], torch.zeros(d)
    for _ in range(30):
        for i, (Xi, yi) in enumerate(shards):
            xs[i] = admm._newton(Xi, yi, len(X), z, lams[i], RHO, xs[i], admm.NEWTON_STEPS)[0]
            lams[i] = lams[i] + RHO * (xs[i] - z)
        z = sum(RHO * x + l for x, l in zip(xs, lams)) / (LAM + WORKERS * RHO)
    assert (h.z - z).abs().max() < 1e-12
    assert _rel(h) < 1e-4
    assert h.residual[-1] < 1e-3 * h.residual[0]
    assert h.time == [0.0] * 30  # no network, no clock


@pytest.mark.parametrize("partial", [1, 2])
def test_async_admm_converges_within_bounded_delay(partial):
    tau = 4
    h = consensus_admm(X, Y, workers=WORKERS, rho=RHO, lam=LAM, partial=partial, max_delay=tau,
                       iterations=60, net=_straggler())
    assert _rel(h) < 1e-4
    assert all(len(a) >= partial for a in h.contributors)
    assert h.max_delay <= tau and min(h.delay) >= 1
    assert h.max_delay > 1  # it really was asynchronous
    for k in range(len(h) - tau + 1):  # every worker heard from in every tau consecutive iterations
        assert set().union(*h.contributors[k:k + tau]) == set(range(WORKERS))
    assert all(b > a for a, b in zip(h.time, h.time[1:]))


def test_async_beats_sync_with_a_straggler():
    target = F_STAR + 1e-3
    sync = consensus_admm(X, Y, workers=WORKERS, rho=RHO, lam=LAM, iterations=20, net=_straggler())
    asyn = consensus_admm(X, Y, workers=WORKERS, rho=RHO, lam=LAM, partial=1, max_delay=4, iterations=40,
                          net=_straggler())
    t_sync, t_async = sync.time_to(target), asyn.time_to(target)
    assert t_async < 0.8 * t_sync < float("inf")
    assert asyn.iterations_to(target) > sync.iterations_to(target)  # more, but cheaper, iterations


def test_same_seed_same_history():
    from commlab.runtime.comm import Comm

    if not hasattr(Comm, "recv_first"):
        pytest.skip("order is deterministic only with comm.recv_first (first in simulated time)")
    runs = [consensus_admm(X, Y, workers=WORKERS, rho=RHO, lam=LAM, partial=2, max_delay=3, iterations=40,
                           net=_straggler(), seed=5) for _ in range(2)]
    a, b = runs
    assert (a.objective, a.time, a.contributors, a.delay) == (b.objective, b.time, b.contributors, b.delay)
    assert torch.equal(a.z, b.z)


def test_labels_in_0_1_or_plus_minus_1_and_numpy_or_float32_inputs():
    a = consensus_admm(X.float(), Y, workers=2, rho=RHO, lam=LAM, iterations=5)
    b = consensus_admm(X.float().numpy(), Y_PM.long().numpy(), workers=2, rho=RHO, lam=LAM, iterations=5)
    assert a.objective == b.objective and a.z.dtype == torch.float64


@pytest.mark.parametrize("kw, name", [
    (dict(workers=0), "workers"), (dict(workers=401), "workers"), (dict(workers=2.5), "workers"),
    (dict(partial=0), "partial"), (dict(partial=5), "partial"), (dict(max_delay=0), "max_delay"),
    (dict(rho=0.0), "rho"), (dict(rho=-1.0), "rho"), (dict(iterations=0), "iterations"), (dict(lam=-1.0), "lam"),
])
def test_bad_arguments(kw, name):
    value = repr(next(iter(kw.values())))
    with pytest.raises(ValueError, match=name) as e:
        consensus_admm(X, Y, **kw)
    assert value in str(e.value)


@pytest.mark.parametrize("data, what", [
    ((X[0], Y), "2-D"), ((X.long(), Y), "float"), ((X[:0], Y[:0]), "non-empty"),
    ((X, Y[:-1]), "labels"), ((X, Y + 1), r"\[1, 2\]"),
])
def test_bad_data(data, what):
    with pytest.raises(ValueError, match=what):
        consensus_admm(*data)


def test_failing_worker_names_its_rank(monkeypatch):
    original = admm._worker

    def worker(comm, *args):
        if comm.rank == 1:
            raise RuntimeError("worker 1 broke")
        return original(comm, *args)

    monkeypatch.setattr(admm, "_worker", worker)
    with pytest.raises(RankError, match="worker 1 broke") as e:
        consensus_admm(X, Y, workers=3, iterations=5, timeout=10)
    assert e.value.rank == 1


def test_gloo_two_workers():
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("Gloo is not available")
    sync = consensus_admm(X, Y, workers=2, rho=RHO, lam=LAM, iterations=10, runtime="gloo")
    threads = consensus_admm(X, Y, workers=2, rho=RHO, lam=LAM, iterations=10)
    assert (sync.z - threads.z).abs().max() < 1e-12  # synchronous: the order of arrivals does not matter
    asyn = consensus_admm(X, Y, workers=2, rho=RHO, lam=LAM, partial=1, max_delay=2, iterations=30, runtime="gloo")
    assert asyn.max_delay <= 2 and _rel(asyn) < 1e-3


def test_objective_takes_either_label_convention():
    X = torch.randn(30, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    y01 = (X[:, 0] > 0).double()
    w = torch.tensor([0.5, -1.0, 0.25], dtype=torch.float64)
    assert admm.logistic_objective(X, y01, 0.1, w) == admm.logistic_objective(X, 2 * y01 - 1, 0.1, w)
