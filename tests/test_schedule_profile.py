"""schedule.profile: a model's layers in forward order, their gradient bytes (every parameter
exactly once, tied weights once), FLOP shares against torch's own FLOP counter, and the
errors a bad Profile gives."""
import math

import pytest
import torch
import torch.nn as nn
from torch.utils.flop_counter import FlopCounterMode

from commlab import data
from commlab.models import build_model, resnet50
from commlab.schedule import Profile, model_profile

FLOPS = 1e12


def _check_cover(model, prof):
    """Every trainable parameter in exactly one layer; bytes per layer are its parameters'."""
    params = [p for p in model.parameters() if p.requires_grad]
    positions = [pos for layer in prof.params for pos in layer]
    assert sorted(positions) == list(range(len(params)))  # each exactly once
    for l, layer in enumerate(prof.params):
        assert prof.grad_bytes[l] == sum(params[i].numel() * params[i].element_size() for i in layer)
    assert prof.total_bytes == 4 * sum(p.numel() for p in params)
    assert len(prof.names) == len(prof.params) == len(prof.forward_s) == len(prof.backward_s) == prof.layers


def _forward_order(model, x):
    """Names of parameter-owning modules in the order their forward ends (an independent probe)."""
    seen = []
    handles = [m.register_forward_hook(lambda mod, a, o, n=n: seen.append(n) if n not in seen else None)
               for n, m in model.named_modules() if any(True for _ in m.parameters(recurse=False))]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return seen


def _total_flops(model, x):
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(x)
    return counter.get_total_flops()


# ----------------------------------------------------------------------------- layers and bytes
def test_mlp_layers_forward_order_and_bytes():
    ds = data.load("digits")
    model = build_model("mlp", ds, hidden=[32] * 5)
    x = ds.x_train[:16]
    prof = model_profile(model, x, flops=FLOPS)
    linears = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    assert list(prof.names) == linears == _forward_order(model, x)
    assert prof.layers == 6 and prof.batch == 16 and prof.itemsize == 4
    _check_cover(model, prof)
    # a Linear(i, o) layer: weight i*o and bias o floats, its two parameters in order
    sizes = [64] + [32] * 5 + [10]
    assert list(prof.grad_bytes) == [4 * (i * o + o) for i, o in zip(sizes, sizes[1:])]
    assert prof.params == tuple((2 * l, 2 * l + 1) for l in range(6))
    # FLOPs of each Linear (ReLUs count 0): 2 * in * out * batch, backward twice that
    for l, (i, o) in enumerate(zip(sizes, sizes[1:])):
        assert prof.forward_s[l] * FLOPS == pytest.approx(2 * i * o * 16, rel=1e-12)
        assert prof.backward_s[l] == pytest.approx(2 * prof.forward_s[l], rel=1e-12)


def test_cnn_and_transformer_cover_every_parameter_once():
    dsi = data.load("digits", image=True)
    cnn = build_model("cnn", dsi)
    prof = model_profile(cnn, dsi.x_train[:8])
    _check_cover(cnn, prof)
    assert list(prof.names) == _forward_order(cnn, dsi.x_train[:8])
    assert sum(prof.forward_s) * 1e12 == pytest.approx(_total_flops(cnn, dsi.x_train[:8]), rel=1e-12)

    dst = data.load("tokens")
    tr = build_model("transformer", dst)
    x = dst.x_train[:8]
    prof = model_profile(tr, x)
    _check_cover(tr, prof)
    assert sum(prof.forward_s) * 1e12 == pytest.approx(_total_flops(tr, x), rel=1e-12)
    # nn.MultiheadAttention uses out_proj's weight without calling out_proj's forward: its
    # parameters belong to the attention layer (the nearest ancestor that ran)
    names = [n for n, _ in tr.named_parameters()]
    for k in range(2):
        att = prof.names.index(f"encoder.layers.{k}.self_attn")
        owned = {names[i] for i in prof.params[att]}
        assert owned == {f"encoder.layers.{k}.self_attn.{p}" for p in
                         ("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias")}
    assert "encoder.layers.0.self_attn.out_proj" not in prof.names
    # forward order: embeddings first, the head last
    assert prof.names[0] == "tok" and prof.names[-1] == "head"


def test_single_linear_flops_against_torch_flop_counter():
    torch.manual_seed(0)
    lin = nn.Linear(37, 11)
    x = torch.randn(5, 37)
    prof = model_profile(lin, x, flops=2.0)
    assert prof.layers == 1 and prof.names == ("",)  # the root module is the layer
    assert prof.forward_s[0] * 2.0 == _total_flops(lin, x) == 2 * 37 * 11 * 5
    assert prof.backward_s[0] == 2 * prof.forward_s[0]


def test_flop_shares_follow_the_layers_and_work_between_is_folded_forward():
    torch.manual_seed(0)
    # parameter-free work (here a matmul with a constant, counted by torch) before the second
    # layer is that layer's; after the last layer it is the last layer's
    const = torch.randn(20, 20)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(8, 20), nn.Linear(20, 3)

        def forward(self, x):
            h = self.a(x) @ const          # 2*20*20*B, before b
            out = self.b(h)
            return out @ torch.ones(3, 3)  # 2*3*3*B, after the last layer

    B = 4
    prof = model_profile(Net(), torch.randn(B, 8), flops=1.0)
    assert prof.names == ("a", "b")
    assert prof.forward_s == (2 * 8 * 20 * B, 2 * 20 * 20 * B + 2 * 20 * 3 * B + 2 * 3 * 3 * B)
    seconds = model_profile(Net(), torch.randn(B, 8), seconds=0.3)
    assert sum(seconds.forward_s) + sum(seconds.backward_s) == pytest.approx(0.3)
    share = [f / sum(prof.forward_s) for f in prof.forward_s]
    assert [f / sum(seconds.forward_s) for f in seconds.forward_s] == pytest.approx(share)


def test_model_is_left_as_it_was():
    ds = data.load("digits")
    model = build_model("mlp", ds, hidden=[8])
    model.train()
    model(ds.x_train[:4]).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model_profile(model, ds.x_train[:4])
    assert all(m.training for m in model.modules())
    assert all(torch.equal(g, p.grad) for g, p in zip(grads, model.parameters()))


# ----------------------------------------------------------------------------- tied weights
class Tied(nn.Module):
    """An embedding whose weight the output layer reuses (as language models tie them)."""

    def __init__(self, vocab=12, d=6):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.mid = nn.Linear(d, d)
        self.out = nn.Linear(d, vocab)
        self.out.weight = self.emb.weight

    def forward(self, tokens):
        return self.out(self.mid(self.emb(tokens)).mean(1))


def test_tied_weight_belongs_to_its_first_user_once():
    model = Tied()
    x = torch.randint(0, 12, (3, 5))
    prof = model_profile(model, x)
    _check_cover(model, prof)
    assert prof.names == ("emb", "mid", "out")
    names = [n for n, _ in model.named_parameters()]  # the tied weight is listed once
    assert names == ["emb.weight", "mid.weight", "mid.bias", "out.bias"]
    assert [[names[i] for i in layer] for layer in prof.params] == [["emb.weight"], ["mid.weight", "mid.bias"],
                                                                   ["out.bias"]]
    assert prof.total_bytes == 4 * (12 * 6 + 6 * 6 + 6 + 12)


def test_a_layer_left_without_parameters_is_folded():
    class AllTied(nn.Module):  # b's only parameter is a's weight: b is no layer of its own
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(5, 5, bias=False)
            self.b = nn.Linear(5, 5, bias=False)
            self.b.weight = self.a.weight
            self.c = nn.Linear(5, 2)

        def forward(self, x):
            return self.c(self.b(self.a(x)))

    B = 3
    prof = model_profile(AllTied(), torch.randn(B, 5), flops=1.0)
    assert prof.names == ("a", "c") and prof.params == ((0,), (1, 2))
    assert sum(prof.forward_s) == 2 * 5 * 5 * B * 2 + 2 * 5 * 2 * B  # no FLOP lost
    assert prof.forward_s[0] == 2 * 5 * 5 * B


def test_meta_resnet50():
    model = resnet50()
    x = torch.zeros(2, 3, 224, 224, device="meta")
    prof = model_profile(model, x)
    _check_cover(model, prof)
    assert prof.total_bytes == 4 * 25_557_032
    convs = sum(isinstance(m, nn.Conv2d) for m in model.modules())
    bns = sum(isinstance(m, nn.BatchNorm2d) for m in model.modules())
    assert prof.layers == convs + bns + 1 == 107
    assert prof.names[0] == "0" and prof.names[-1] == str(len(model) - 1)  # stem conv first, fc last
    assert sum(prof.forward_s) * 1e12 == pytest.approx(_total_flops(model, x), rel=1e-12)
    # about 4.1 G multiply-accumulates per image (v1.5)
    assert 8.0e9 < sum(prof.forward_s) * 1e12 / 2 < 8.4e9


# ----------------------------------------------------------------------------- Profile itself
def test_ready_and_scaled():
    p = Profile([1, 2, 3], [0.5, 1.0, 2.0], [4, 8, 12])
    assert p.ready() == [3.5, 3.0, 2.0]  # layer 2 first
    assert p.total_bytes == 24 and p.layers == 3 and p.names == ("layer0", "layer1", "layer2")
    s = p.scaled(19.0)
    assert sum(s.forward_s) + sum(s.backward_s) == pytest.approx(19.0)
    assert s.forward_s == pytest.approx((2, 4, 6)) and s.grad_bytes == p.grad_bytes


@pytest.mark.parametrize("kw, match", [
    (dict(forward_s=[1, 2], backward_s=[1], grad_bytes=[4, 4]), "backward_s has 1 layers"),
    (dict(forward_s=[1], backward_s=[1], grad_bytes=[4, 4]), "forward_s has 1 layers"),
    (dict(forward_s=[-1], backward_s=[1], grad_bytes=[4]), "forward_s must be >= 0"),
    (dict(forward_s=[1], backward_s=[math.nan], grad_bytes=[4]), "backward_s must be >= 0"),
    (dict(forward_s=[1], backward_s=[1], grad_bytes=[-4]), "grad_bytes must be >= 0"),
    (dict(forward_s=[], backward_s=[], grad_bytes=[]), "at least one layer"),
    (dict(forward_s=[1], backward_s=[1], grad_bytes=[4], batch=0), "batch must be an integer >= 1"),
    (dict(forward_s=[1], backward_s=[1], grad_bytes=[4], batch=2.5), "batch must be an integer >= 1"),
    (dict(forward_s=[1], backward_s=[1], grad_bytes=[6]), "multiple of itemsize=4"),
])
def test_bad_profile_inputs_raise(kw, match):
    with pytest.raises(ValueError, match=match):
        Profile(**kw)


def test_models_a_schedule_cannot_profile():
    with pytest.raises(ValueError, match="no module that owns trainable parameters"):
        model_profile(nn.ReLU(), torch.randn(2, 3))

    class Unused(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.spare = nn.Linear(3, 3), nn.Linear(3, 3)

        def forward(self, x):
            return self.a(x)

    with pytest.raises(ValueError, match=r"\['spare'\] own parameters but never run"):
        model_profile(Unused(), torch.randn(2, 3))
