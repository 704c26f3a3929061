"""commlab.own_model: a builder, a loader and an input shape are read as documented, bad names
are refused with the reason, and provenance says what of the advice on a profile is measured and
what modelled. The command line's use of them is in test_cli_train and test_cli_profile."""
import dataclasses

import pytest
import torch

from commlab import own_model, sim
from own_model_fixture import mine  # noqa: F401  (a module of your own model)


def test_builders_loaders_and_inputs_are_read_as_documented(mine):
    from commlab import data

    model = own_model.builder("mine_model:build")(None)
    assert isinstance(model, torch.nn.Sequential)
    ds = own_model.loader("mine_model:data")
    assert isinstance(ds, data.Dataset) and ds.num_classes == 4 and ds.input_shape == (3, 8, 8)
    assert own_model.builder("mine_model:build_for")(ds).out_features == 4
    assert torch.equal(own_model.loader("mine_model:torch_data").x_train, ds.x_train)
    x = own_model.example_input("3x8x8", 5)
    assert x.shape == (5, 3, 8, 8) and x.dtype == torch.float32
    t = own_model.example_input("12", 2, vocab=50)
    assert t.shape == (2, 12) and t.dtype == torch.long and int(t.max()) < 50



@pytest.mark.parametrize("read, says", [
    (lambda: own_model.builder("no_such_module:build"), "cannot import 'no_such_module'"),
    (lambda: own_model.builder("mine_model"), "name it as pkg.module:function"),
    (lambda: own_model.builder("mine_model:NOT_A_FUNCTION"), "is not a function"),
    (lambda: own_model.builder("mine_model:two_arguments"), "takes width, depth"),
    (lambda: own_model.builder("mine_model:raises")(None), "the builder raised RuntimeError: boom in the builder"),
    (lambda: own_model.loader("mine_model:forty_two"), "returned int; return a commlab.data.Dataset"),
    (lambda: own_model.example_input("3x0", 2), "one sample's shape"),
    (lambda: own_model.example_input("3", 0), "--batch 0 must be an integer >= 1"),
])
def test_bad_names_are_refused_with_the_reason(mine, read, says):
    with pytest.raises(ValueError, match=says):
        read()


def test_provenance_of_a_profile_from_flop_counts():
    assert own_model.provenance(sim.profile("resnet50"), "r.json") == [
        "r.json: a profile from FLOP counts (no measurement recorded in it)"]


def test_a_module_that_raises_on_import_is_named_with_its_error(mine):
    (mine / "raises_on_import.py").write_text("raise RuntimeError('broken at import')\n")
    with pytest.raises(ValueError, match="--model 'raises_on_import:build': importing 'raises_on_import' raised "
                                         "RuntimeError: broken at import"):
        own_model.builder("raises_on_import:build")
    with pytest.raises(ValueError, match="--data 'raises_on_import:data': importing"):
        own_model.loader("raises_on_import:data")


def test_provenance_prints_the_train_command_last_with_the_device_mapped_to():
    measured = sim.profile("resnet50")
    about = dict(measured.about, measured="thread CPU time per layer", device="cpu (1 thread)", torch="2",
                 batch=measured.batch, input="(1,)", model="mine_model:build")
    first = {"workers": 8, "sync": "bsp", "arch": "ring", "compress": None, "schedule": None}
    lines = own_model.provenance(dataclasses.replace(measured, about=about), "my dir/p.json", first, "10GbE", "v100")
    assert lines[-2].startswith("in the command below, replace YOUR_LOADER")
    assert lines[-1] == ("to train the first row: python -m commlab train --model mine_model:build --data YOUR_LOADER "
                         "--workers 8 --sync \"bsp\" --arch \"ring\" --profile 'my dir/p.json' --batch-size "
                         f"{measured.batch} --net 10GbE --device v100")
    measured_link = own_model.provenance(dataclasses.replace(measured, about=about), "p.json", first,
                                         "link(gbits=9.4, latency_us=25)")
    assert measured_link[-1].endswith("--net 'link(gbits=9.4, latency_us=25)'")   # quoted: it runs as printed
