"""commlab.sim.measured: a profile timed layer by layer on this CPU has the FLOP profile's layers,
bytes and shapes exactly; its per-layer times add up to the unhooked step within 25% on two
models of different shape defined here (an MLP and a small CNN, not in the registry); a model
that cannot be profiled gets an error naming the cause."""
import pytest
import torch
from torch import nn

from commlab import sim
from commlab.schedule.profile import model_profile


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv1, self.conv2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1)
        self.norm, self.head = nn.BatchNorm2d(32), nn.Linear(32, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.relu(self.norm(self.conv2(x)))
        return self.head(x.mean(dim=(2, 3)))


MODELS = {"mlp": (_mlp, (512, 128)), "cnn": (SmallCNN, (32, 3, 32, 32))}


@pytest.mark.parametrize("name", MODELS)
def test_layers_bytes_and_shapes_are_the_flop_profiles(name):
    build, shape = MODELS[name]
    x = torch.randn(*shape)
    measured, counted = sim.measure(build(), x, steps=2, warmup=1), model_profile(build(), x)
    assert measured.names == counted.names and measured.params == counted.params
    assert measured.grad_bytes == counted.grad_bytes and measured.shapes == counted.shapes
    assert measured.batch == shape[0] and measured.device is sim.DEVICES["cpu"]
    assert all(t > 0 for t in measured.forward_s + measured.backward_s)
    about = measured.about
    assert about["batch"] == shape[0] and about["input"] == str(shape) and about["torch"] == torch.__version__
    clock = "thread CPU time" if torch.get_num_threads() == 1 else "wall time"
    assert about["measured"] == f"{clock} per layer" and about["device"].startswith("cpu")
    assert len(about["flops"]) == measured.layers


@pytest.fixture
def one_thread():
    """One math thread, so the clock is the thread's CPU time, which the tests running beside this
    one do not lengthen (on the wall clock, beside a book build, the ratio ranged 0.5 to 2.5)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("name", MODELS)
def test_layers_add_up_to_the_whole_step(name, one_thread):
    build, shape = MODELS[name]
    p = sim.measure(build(), torch.randn(*shape), steps=9, warmup=3)
    layers = sum(p.forward_s) + sum(p.backward_s)
    assert 0.75 < layers / p.about["step_s"] < 1.25, (layers, p.about["step_s"])


def test_the_model_is_left_as_it_was():
    model = _mlp()
    before = [q.detach().clone() for q in model.parameters()]
    sim.measure(model, torch.randn(8, 128), steps=1, warmup=0)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert all(q.grad is None for q in model.parameters())
    assert not model._forward_hooks and all(not m._forward_hooks for m in model.modules())


def test_a_custom_loss_and_a_dict_input():
    class Keyed(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 8), nn.Linear(8, 2)

        def forward(self, features, scale):
            return {"out": self.b(torch.relu(self.a(features))) * scale}

    p = sim.measure(Keyed(), {"features": torch.randn(6, 4), "scale": torch.ones(6, 1)},
                    loss=lambda out: out["out"].pow(2).sum(), steps=1, warmup=0)
    assert p.names == ("a", "b") and p.batch == 6


class TwoHeads(nn.Module):
    """A trunk and two heads, as BERT's pre-training model returns a model output of two."""

    def __init__(self, used=("one", "two")):
        super().__init__()
        self.trunk, self.one, self.two, self.used = nn.Linear(4, 8), nn.Linear(8, 3), nn.Linear(8, 2), used

    def forward(self, x):
        h = torch.relu(self.trunk(x))
        heads = {"one": self.one(h), "two": self.two(h)}  # both run; only the used ones are returned
        return {name: heads[name] for name in self.used} | {"ids": x.argmax(1)}


def test_every_floating_output_is_trained_by_default():
    p = sim.measure(TwoHeads(), torch.randn(6, 4), steps=1, warmup=0)
    assert p.names == ("trunk", "one", "two")


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(8, 8)

    def forward(self, x):
        return self.layer(torch.relu(self.layer(x)))


class RootParameter(nn.Module):
    """A positional embedding owned by the model itself, a BatchNorm, a shared block used twice
    and a head whose weight is tied to the first layer's."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.pos = nn.Parameter(torch.zeros(1, 16))
        self.inp = nn.Linear(16, 16)
        self.norm = nn.BatchNorm1d(16)
        self.shared = nn.Linear(16, 16)
        self.head = nn.Linear(16, 16)
        self.head.weight = self.inp.weight  # tied

    def forward(self, x):
        h = self.norm(self.inp(x + self.pos))
        return self.head(self.shared(torch.relu(self.shared(h))))


def test_every_parameter_is_timed_where_its_gradient_lands():
    torch.set_num_threads(1)
    p = sim.measure(RootParameter(), torch.randn(64, 16), steps=3, warmup=1)
    # the model's own parameter is a layer placed where the model starts; the shared block counts
    # once, where it is first called; the tied weight belongs to its first user
    assert p.names == ("", "inp", "norm", "shared", "head")
    assert p.grad_bytes == (64, 4 * (256 + 16), 4 * 32, 4 * (256 + 16), 4 * 16)
    assert all(t > 0 for t in p.backward_s[1:]) and all(t > 0 for t in p.forward_s[1:])
    # the root layer holds no work of its own: it cannot take the whole backward, as it did when
    # it was placed last
    assert p.backward_s[0] < 0.5 * sum(p.backward_s)
    assert 0.5 < (sum(p.forward_s) + sum(p.backward_s)) / p.about["step_s"] < 2.0
    counted = model_profile(RootParameter(), torch.randn(64, 16))
    assert counted.names == p.names and counted.grad_bytes == p.grad_bytes


def test_a_module_called_twice_is_one_layer():
    p = sim.measure(Twice(), torch.randn(4, 8), steps=1, warmup=0)
    assert p.names == ("layer",) and p.forward_s[0] > 0


@pytest.mark.parametrize("model, x, message", [
    (nn.Sequential(nn.ReLU(), nn.Flatten()), torch.randn(2, 3), "no trainable parameters"),
    (_mlp(), torch.randn(4, 7), r"failed on an input of shape \(4, 7\): RuntimeError: mat1 and mat2"),
    (_mlp(), torch.randn(4, 128), "steps=0 must be an integer >= 1"),
    (nn.Linear(4, 2, device="meta"), torch.zeros(3, 4, device="meta"), "the model is on the meta device"),
    (TwoHeads(used=("one",)), torch.randn(6, 4), "layer 'two' gets no gradient from the loss"),
])
def test_a_model_that_cannot_be_profiled_is_told_why(model, x, message):
    kwargs = {"steps": 0} if "steps" in message else {}
    with pytest.raises(ValueError, match=message):
        sim.measure(model, x, **kwargs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_cuda_events_time_the_layers():
    # layers large enough that the GPU's work, not the host's hooks, sets the time: the small MLP's
    # kernels take microseconds on an H200, and the hooks between them would be most of the step
    torch.manual_seed(0)
    big = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10))
    p = sim.measure(big, torch.randn(8192, 4096), device="cuda", steps=5)
    assert p.about["measured"] == "CUDA events per layer" and p.about["device"] == torch.cuda.get_device_name()
    assert all(t > 0 for t in p.forward_s + p.backward_s)
    assert 0.5 < (sum(p.forward_s) + sum(p.backward_s)) / p.about["step_s"] < 2.0
