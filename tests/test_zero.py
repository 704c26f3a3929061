"""commlab.parallel.zero: ZeRO 1-3 train exactly like BSP, send the closed form's bytes, and hold
the memory of the paper's formulas; its errors name the valid choices."""
import threading

import pytest
import torch
import torch.nn.functional as F

from commlab.arch import ring
from commlab.arch.chunks import bounds
from commlab.data import load
from commlab.models import build_model
from commlab.net.link import get_link
from commlab.parallel.zero import Zero, ZeroExchange, zero_bytes, zero_memory
from commlab.runtime import launch
from commlab.train import Trainer

KW = dict(model="mlp", data="digits", batch_size=16, lr=0.1, momentum=0.9, weight_decay=1e-3, seed=0,
          progress=False, eval_every=3, net="10GbE")
PSI = 4810  # the digits MLP's parameters
_LOCK = threading.Lock()


@pytest.fixture(scope="module")
def bsp():
    return Trainer(workers=4, arch="ring", **KW).fit(6)


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_every_stage_trains_exactly_like_bsp(bsp, stage):
    h = Trainer(workers=4, arch=f"zero(stage={stage})", **KW).fit(6)
    assert max(abs(a - b) for a, b in zip(bsp.loss, h.loss)) < 1e-6
    assert h.test_accuracy == bsp.test_accuracy  # stage 3 gathers the model off the record to evaluate


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_bytes_per_step_are_the_closed_form(bsp, stage):
    h = Trainer(workers=4, arch=f"zero(stage={stage})", **KW).fit(6)
    for step in range(6):  # evaluating at steps 3 and 6 sends nothing that is counted
        assert sum(h.bytes_sent[step]) == 4 * zero_bytes(PSI, 4, stage)
    if stage < 3:
        assert h.bytes_sent == bsp.bytes_sent and h.sim_time == bsp.sim_time
    else:
        assert h.sim_time[-1] > bsp.sim_time[-1]


TKW = dict(model="transformer", data="tokens", batch_size=8, lr=0.05, momentum=0.9, weight_decay=1e-3, seed=1,
           progress=False)


@pytest.fixture(scope="module")
def transformer_bsp():
    return Trainer(workers=2, arch="ring", **TKW).fit(3)


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_transformer_every_stage_equals_bsp(transformer_bsp, stage):
    h = Trainer(workers=2, arch=f"zero(stage={stage})", **TKW).fit(3)
    assert max(abs(a - b) for a, b in zip(transformer_bsp.loss, h.loss)) < 1e-5
    assert h.test_accuracy == transformer_bsp.test_accuracy


def test_time_is_the_closed_form_and_the_simulated_clock(bsp):
    """Stages 1, 2 cost a ring all-reduce; stage 3 half as much again: its simulated clock runs
    ahead of BSP's by one more all-gather of Psi fp32 values per step."""
    link = get_link("10GbE")
    one, three = Zero(stage=1).time(4 * PSI, 4, link), Zero(stage=3).time(4 * PSI, 4, "10GbE")
    assert one == Zero(stage=2).time(4 * PSI, 4, link) == ring.cost(4 * PSI, 4, link)
    assert three == pytest.approx(1.5 * one) and three == pytest.approx(3 * 3 * link.time(4 * PSI / 4))
    h = Trainer(workers=4, arch="zero(stage=3)", **KW).fit(6)
    assert h.sim_time[-1] - bsp.sim_time[-1] == pytest.approx(6 * (three - one), rel=1e-4)  # chunks of 1203 and 1202


def _released(comm):
    """Stage 3 on 2 ranks: (numels between steps, numels after forward, bytes sent by backward,
    numels after backward) of the model's parameters."""
    ds = load("digits")
    with _LOCK:
        torch.manual_seed(0)
        model = build_model("mlp", ds)
    ex = ZeroExchange(comm, model, dict(lr=0.1, momentum=0.0, weight_decay=0.0), 3, "sgd")
    x, y = ds.x_train[comm.rank * 8:(comm.rank + 1) * 8], ds.y_train[comm.rank * 8:(comm.rank + 1) * 8]
    out = []
    for _ in range(2):
        between = [p.numel() for p in model.parameters()]
        ex.begin(0.0)
        loss = F.cross_entropy(model(x), y)
        after_forward = [p.numel() for p in model.parameters()]
        before = comm.stats.snapshot()
        loss.backward()
        sent = (comm.stats.snapshot() - before).bytes_sent
        after_backward = [p.numel() for p in model.parameters()]
        ex.step(model, None)
        out.append((between, after_forward, sent, after_backward))
    return out, ex.memory()


def test_stage_3_releases_the_parameters_and_gathers_them_again_for_backward():
    for out, memory in launch(_released, 2):
        for between, after_forward, sent, after_backward in out:
            assert sum(between) == sum(after_forward) == 0  # only the chunk is held
            assert sent == 4 * PSI // 2  # backward's all-gather: (N-1)/N Psi fp32 values
            assert sum(after_backward) == PSI
        assert memory["params"] == 4 * PSI // 2


def _steps(comm, stage, optimizer, settings, steps=2, precision="fp32"):
    """A few ZeRO steps by hand on each rank's own batches; (memory, final whole parameters)."""
    ds = load("digits")
    with _LOCK:
        torch.manual_seed(0)
        model = build_model("mlp", ds)
    ex = ZeroExchange(comm, model, settings, stage, optimizer, precision)
    g = torch.Generator().manual_seed(comm.rank)
    for _ in range(steps):
        idx = torch.randint(0, len(ds.y_train), (8,), generator=g)
        ex.begin(0.0)
        loss = F.cross_entropy(model(ds.x_train[idx]), ds.y_train[idx])
        for p in model.parameters():
            p.grad = None
        loss.backward()
        ex.step(model, None)
    with ex.evaluating(model):
        whole = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).float()
    return ex.memory(), whole


def _reference(optimizer, settings, world, steps=2):
    """One process: the average of the ranks' gradients, then torch's optimizer."""
    ds = load("digits")
    torch.manual_seed(0)
    model = build_model("mlp", ds)
    opt = (torch.optim.Adam(model.parameters(), lr=settings["lr"], weight_decay=settings["weight_decay"])
           if optimizer == "adam" else torch.optim.SGD(model.parameters(), **settings))
    gens = [torch.Generator().manual_seed(r) for r in range(world)]
    for _ in range(steps):
        total = [torch.zeros_like(p) for p in model.parameters()]
        for g in gens:
            idx = torch.randint(0, len(ds.y_train), (8,), generator=g)
            model.zero_grad()
            F.cross_entropy(model(ds.x_train[idx]), ds.y_train[idx]).backward()
            total = [t + p.grad for t, p in zip(total, model.parameters())]
        for p, t in zip(model.parameters(), total):
            p.grad = t / world
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


@pytest.mark.parametrize("optimizer, momentum, kind", [("sgd", 0.0, "sgd"), ("sgd", 0.9, "sgd+momentum"),
                                                        ("adam", 0.0, "adam")])
@pytest.mark.parametrize("stage", [1, 2, 3])
@pytest.mark.parametrize("world", [2, 5])  # 4810 parameters split evenly over both
def test_memory_is_the_papers_formula_and_the_update_torchs(optimizer, momentum, kind, stage, world):
    settings = dict(lr=0.05, momentum=momentum, weight_decay=1e-3)
    results = launch(_steps, world, args=(stage, optimizer, settings))
    want = zero_memory(PSI, world, stage, kind, "fp32")
    ref = _reference(optimizer, settings, world)
    for memory, whole in results:
        assert memory == pytest.approx(want)
        assert torch.allclose(whole, ref, atol=1e-6)


@pytest.mark.parametrize("optimizer, precision", [("sgd", "fp32"), ("adam", "mixed")])
def test_uneven_chunks_hold_the_formula_with_the_ranks_own_chunk(optimizer, precision):
    """4810 parameters over 3 ranks: chunks of 1604, 1603, 1603; each rank's memory is the
    formula with Psi/N replaced by its own chunk, and the fp32 SGD update is still torch's."""
    settings = dict(lr=0.05, momentum=0.9 if optimizer == "sgd" else 0.0, weight_decay=1e-3)
    a, k = (4, 4) if optimizer == "sgd" else (2, 12)
    ref = _reference(optimizer, settings, 3)
    for stage in (1, 2, 3):
        results = launch(_steps, 3, args=(stage, optimizer, settings, 2, precision))
        for (memory, whole), (lo, hi) in zip(results, bounds(PSI, 3)):
            c = hi - lo
            params, grads = a * (c if stage == 3 else PSI), a * (c if stage >= 2 else PSI)
            assert memory == {"params": params, "grads": grads, "optimizer": k * c, "total": params + grads + k * c}
            if precision == "fp32":
                assert torch.allclose(whole, ref, atol=1e-6)
    assert [hi - lo for lo, hi in bounds(PSI, 3)] == [1604, 1603, 1603]


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_mixed_precision_adam_holds_the_papers_16_bytes_split_as_zero_says(stage):
    """bf16 parameters and gradients (A = 2), fp32 master chunk, momentum and variance (K = 12);
    the update stays close to fp32 Adam's and half the bytes go on the wire."""
    settings = dict(lr=0.05, momentum=0.0, weight_decay=1e-3)
    results = launch(_steps, 5, args=(stage, "adam", settings, 2, "mixed"))  # 4810 = 5 x 962
    want = zero_memory(PSI, 5, stage, "adam", "mixed")
    ref = _reference("adam", settings, 5)
    for memory, whole in results:
        assert memory == pytest.approx(want)
        gap = (whole - ref).abs()  # Adam's first steps are almost sign steps: a bf16 gradient near 0 may flip one
        assert gap.mean() < 2e-3 and (gap > 0.02).float().mean() < 0.01
    kw = dict(KW, lr=0.01, momentum=0.0)
    mixed = Trainer(workers=4, arch=f"zero(stage={stage}, optimizer='adam', precision='mixed')", **kw).fit(2)
    assert sum(mixed.bytes_sent[-1]) == 4 * zero_bytes(PSI, 4, stage, bytes_per_value=2)


def test_zero_memory_is_zeros_figure_1():
    """Rajbhandari et al. 2020, Figure 1: 7.5B parameters, 64 GPUs, mixed-precision Adam."""
    gb = [zero_memory(7.5e9, 64, stage)["total"] / 1e9 for stage in range(4)]
    assert [round(g, 1) for g in gb] == [120.0, 31.4, 16.6, 1.9]
    assert zero_memory(1, 1, 0, "adam", "mixed") == {"params": 2, "grads": 2, "optimizer": 12, "total": 16}


def test_gloo_stage_3_equals_threads():
    kw = dict(KW, net=None)
    threads = Trainer(workers=2, arch="zero(stage=3)", **kw).fit(3)
    gloo = Trainer(workers=2, arch="zero(stage=3)", runtime="gloo", **kw).fit(3)
    assert max(abs(a - b) for a, b in zip(threads.loss, gloo.loss)) < 1e-6
    assert gloo.bytes_sent == threads.bytes_sent


@pytest.mark.parametrize("kw, words", [
    (dict(arch="zero(stage=4)"), ["stage 4", "valid stages: 1, 2, 3"]),
    (dict(arch="zero(stage=2, optimizer='lamb')"), ["'lamb'", "sgd, adam"]),
    (dict(arch="zero(stage=2, precision='fp8')"), ["'fp8'", "fp32, mixed"]),
    (dict(arch="zero(stage=2, precision='mixed')"), ["optimizer='adam'"]),
    (dict(arch="zero(stage=2)", sync="local_sgd(period=2)"), ["sync='local_sgd(period=2)' averages models",
                                                              "valid: arch=", "ring"]),
    (dict(arch="zero(stage=2)", sync="asp"), ["sync='asp' runs over a parameter server", "valid: arch=ps"]),
    (dict(arch="zero(stage=1)", compress="topk(0.1)"), ["compress='topk(0.1)'", "no compression (use None)"]),
    (dict(arch="zero(stage=1)", schedule="wfbp"), ["schedule='wfbp'", "valid with a schedule: arch=", "ring"]),
])
def test_bad_input_fails_before_any_rank_starts(kw, words):
    with pytest.raises(ValueError) as e:
        Trainer(**{**KW, **kw})
    for w in words:
        assert w in str(e.value)


def test_zero_memory_refuses_unknown_choices():
    with pytest.raises(ValueError, match="valid stages: 0"):
        zero_memory(1e9, 8, 5)
    with pytest.raises(ValueError, match="sgd/fp32"):
        zero_memory(1e9, 8, 1, "sgd", "mixed")
