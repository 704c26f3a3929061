"""sim.devices: profiles from FLOPs, scaled to single-GPU throughput only."""
import pytest
import torch
from torch import nn

from commlab import sim
from commlab.models.intensity import count_params
from commlab.models import bert, resnet50
from commlab.sim.devices import Device, get_device

SURVEY = {"resnet50": (64, 253.1), "bert-base": (64, 212.8), "bert-large": (8, 49.0)}


@pytest.fixture(scope="module")
def builtins():
    return {name: sim.builtin(name) for name in sim.BUILTINS}


def test_builtins_take_batch_over_throughput(builtins):
    for name, (batch, rate) in SURVEY.items():
        p = builtins[name]
        assert p.batch == batch
        assert sum(p.forward_s) + sum(p.backward_s) == pytest.approx(batch / rate, rel=1e-12)
        assert all(b == pytest.approx(2 * f) for f, b in zip(p.forward_s, p.backward_s))


def test_builtin_bytes_are_the_models_gradients(builtins):
    assert builtins["resnet50"].total_bytes == 4 * 25_557_032
    assert builtins["bert-base"].total_bytes == 4 * count_params(bert("base"))


def test_builtins_are_cached_and_lazy(builtins):
    assert sim.builtin("resnet50") is builtins["resnet50"]
    assert sim.PROFILES["bert-large"] is builtins["bert-large"]
    assert list(sim.PROFILES) == list(sim.BUILTINS) and len(sim.PROFILES) == 3
    with pytest.raises(KeyError):
        sim.PROFILES["vgg16"]
    with pytest.raises(ValueError, match="'vgg16'.*resnet50"):
        sim.builtin("vgg16")


def test_shape_comes_from_flops(builtins):
    """The built-in is the FLOP profile scaled: every layer in the same proportion."""
    from commlab.schedule import model_profile

    raw = model_profile(resnet50(), torch.zeros(64, 3, 224, 224, device="meta"))
    k = sum(builtins["resnet50"].forward_s) / sum(raw.forward_s)
    assert [f * k for f in raw.forward_s] == pytest.approx(list(builtins["resnet50"].forward_s), rel=1e-9)


def test_flop_rate_for_an_uncalibrated_model():
    p = sim.profile("mlp", batch=4, device=1e9)  # mlp(64, 10), one hidden layer of 64
    flops = 2 * 4 * (64 * 64 + 64 * 10)
    assert sum(p.forward_s) == pytest.approx(flops / 1e9)
    assert p.batch == 4 and p.layers == 2


def test_module_with_example_input():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    p = sim.profile(model, example_input=torch.zeros(5, 8), device=Device("toy", 1e6))
    assert sum(p.forward_s) == pytest.approx(2 * 5 * (8 * 16 + 16 * 2) / 1e6)
    assert p.grad_bytes == (4 * (8 * 16 + 16), 4 * (16 * 2 + 2))


def test_rtx2080ti_flop_rate_for_other_batches():
    p = sim.profile("mlp", batch=2)
    assert sum(p.forward_s) == pytest.approx(2 * 2 * (64 * 64 + 64 * 10) / get_device("rtx2080ti").flops)


@pytest.mark.parametrize("kwargs,match", [
    ({"model": "mlp", "batch": 2, "device": "tpu"}, "unknown device 'tpu'.*rtx2080ti"),
    ({"model": "mlp", "batch": 2, "device": -1.0}, "unknown device -1.0"),
    ({"model": "mlp", "batch": 0}, "batch must be an integer >= 1, got 0"),
    ({"model": "mlp"}, "no calibrated batch for 'mlp'"),
    ({"model": "vgg16", "batch": 2}, "unknown model 'vgg16'.*resnet50"),
    ({"model": nn.Linear(2, 2)}, "needs example_input"),
    ({"model": 3}, "model name or an nn.Module"),
    ({"model": nn.Linear(2, 2), "example_input": torch.zeros(3, 2), "batch": 4}, "batch=4 but example_input holds 3"),
])
def test_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sim.profile(**kwargs)


def test_bad_device():
    with pytest.raises(ValueError, match="flops must be"):
        Device("broken", 0)


def test_work_seconds_is_launches_syncs_traffic_flops_and_host():
    from commlab.compress.cost import KernelWork

    dev = sim.Device("g", 1e12, memory_bandwidth=1e12, efficiency=0.5, launch=1e-5, sync=1e-4, select_passes=10,
                     host_bandwidth=1e9)
    w = KernelWork(passes=3, launches=4, select=100, syncs=2, flops=2e9, host=1)
    d = 1000
    expected = 4 * 1e-5 + 2 * 1e-4 + 4 * (3 * d + 100 * 10) / (0.5 * 1e12) + 2e9 / 1e12 + 4 * d / 1e9
    assert dev.work_seconds(w, d) == pytest.approx(expected, rel=1e-12)
    assert dev.work_seconds(KernelWork(), d) == 0


def test_named_devices_carry_their_data_sheets():
    assert sim.DEVICES["v100"].memory_bandwidth == 900e9 and sim.DEVICES["h100"].memory_bandwidth == 3.35e12
    assert sim.DEVICES["rtx2080ti"].memory_bandwidth == 616e9 and sim.DEVICES["h200"].memory_bandwidth == 4.8e12
    assert sim.profile("resnet50", batch=8, device="v100").device is sim.DEVICES["v100"]
    with pytest.raises(ValueError, match="memory_bandwidth=0"):
        sim.Device("bad", 1e12, memory_bandwidth=0)
    with pytest.raises(ValueError, match="launch=-1"):
        sim.Device("bad", 1e12, launch=-1)


def test_launch_and_sync_are_the_fit_of_the_h200_table():
    """Least squares over every compressor's encode and decode at the table's smallest size, less
    the declared memory, FLOP and selection time, lands on the shipped constants."""
    import dataclasses
    import json
    import pathlib

    import numpy as np

    from commlab.compress import get
    from commlab.sim.devices import LAUNCH, SYNC

    table = pathlib.Path(__file__).parent.parent / "benchmarks" / "measured" / "h200_compress_costs.json"
    h200, rows, seconds = sim.DEVICES["h200"], [], []
    for name, entry in json.loads(table.read_text())["compressors"].items():
        numel = entry["numel"][0]
        cost = get(name).cost((numel,))
        for work, measured in ((cost.encode, entry["encode_s"][0]), (cost.decode, entry["decode_s"][0])):
            rows.append([work.launches, work.syncs])
            seconds.append(measured - h200.work_seconds(dataclasses.replace(work, launches=0, syncs=0), numel))
    launch, sync = np.linalg.lstsq(np.array(rows, float), np.array(seconds), rcond=None)[0]
    assert (launch, sync) == (pytest.approx(LAUNCH, rel=0.01), pytest.approx(SYNC, rel=0.01))
    assert sim.DEVICES["v100"].launch == LAUNCH and sim.DEVICES["cpu"].launch != LAUNCH  # the CPU measured its own
