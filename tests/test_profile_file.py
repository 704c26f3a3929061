"""commlab.sim.profile_file: a profile survives the JSON round trip (its numbers, layers, device
and where they come from), a file is written whole, a file that is not a profile is refused
naming why, and resolve takes a built-in name, a file or a Profile wherever a name was taken."""
import json

import pytest
import torch
from torch import nn

from commlab import sim
from commlab.sim.profile_file import load_profile, resolve, save_profile


def test_a_measured_profile_round_trips(tmp_path):
    p = sim.measure(nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4)), torch.randn(8, 16),
                    steps=1, warmup=0)
    path = save_profile(p, tmp_path / "mine.json")
    q = load_profile(path)
    assert q == p and q.about == p.about and q.device is sim.DEVICES["cpu"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json"]
    doc = json.loads(path.read_text())
    assert doc["format"] == "commlab-profile" and doc["version"] == 1 and doc["device"] == "cpu"
    assert [layer["name"] for layer in doc["layers"]] == ["0", "2"]


def test_a_built_in_profile_round_trips_with_its_device(tmp_path):
    p = sim.builtin("resnet50")
    q = load_profile(save_profile(p, tmp_path / "r.json"))
    assert q == p and q.device is p.device and q.device.name == p.device.name


@pytest.mark.parametrize("text, message", [
    ("{not json", "not JSON"),
    ('{"format": "other"}', "is not a profile file"),
    ('{"format": "commlab-profile", "version": 7}', "profile file version 7; this commlab reads version 1"),
])
def test_a_file_that_is_not_a_profile_is_refused(tmp_path, text, message):
    (tmp_path / "x.json").write_text(text)
    with pytest.raises(ValueError, match=message):
        load_profile(tmp_path / "x.json")


def test_missing_files_and_bad_names_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no profile file"):
        load_profile(tmp_path / "none.json")
    with pytest.raises(ValueError, match="must end in .json"):
        save_profile(sim.builtin("resnet50"), tmp_path / "r.txt")
    with pytest.raises(ValueError, match="unknown model 'vgg'; valid: resnet50, bert-base, bert-large, a profile file"):
        resolve("vgg")


def test_resolve_takes_names_files_and_profiles(tmp_path):
    p = sim.builtin("bert-base")
    assert resolve("bert-base") is p and resolve(p) is p
    assert resolve(str(save_profile(p, tmp_path / "b.json"))) == p
    cluster = sim.Cluster(2, 4, intra="PCIe3-mgwfbp", inter="10GbE")
    assert sim.iteration(tmp_path / "b.json", cluster).time == sim.iteration("bert-base", cluster).time


@pytest.mark.parametrize("change, says", [
    (lambda d: d.pop("layers"), "'layers' must be a non-empty list of layers"),
    (lambda d: d["layers"][0].update(forward_s="fast"), r"layer 0 \('a'\): forward_s must be seconds, a number >= 0, got 'fast'"),
    (lambda d: d.update(device="tpu9"), "device 'tpu9' is not a simulator device; valid: rtx2080ti"),
    (lambda d: d.update(batch=0), "'batch' must be an integer >= 1"),
])
def test_a_file_with_a_bad_field_is_refused_naming_it(tmp_path, change, says):
    doc = {"format": "commlab-profile", "version": 1, "batch": 4, "itemsize": 4, "device": None, "about": {},
           "layers": [{"name": "a", "forward_s": 1e-3, "backward_s": 2e-3, "grad_bytes": 40, "shapes": [[10]]}]}
    change(doc)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=says):
        sim.load_profile(path)
