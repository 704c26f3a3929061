"""commlab.own_model and the command line for your own model: a model and a loader that are not
in the registry, written to a module here, go the whole round trip profile -> file -> simulate ->
advise -> train as the README's tour writes it; a builder, a loader and an input shape are read
as documented, and bad names are refused with the reason."""
import re
import shlex
import sys
import textwrap

import pytest
import torch

from commlab import own_model, sim
from commlab.cli import main

MODULE = '''
import torch
from torch import nn


def build():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
                         nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 4))


def build_for(dataset):
    return nn.Linear(dataset.in_features, dataset.num_classes)


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(400, 3, 8, 8, generator=g)
    return x, (x[:, 0].mean(dim=(1, 2)) > 0).long() + 2 * (x[:, 1].mean(dim=(1, 2)) > 0).long()


def torch_data():
    return torch.utils.data.TensorDataset(*data())


NOT_A_FUNCTION = 3


def raises():
    raise RuntimeError("boom in the builder")


def two_arguments(width, depth):
    return nn.Linear(width, depth)


def forty_two():
    return 42


def loader_raises():
    raise OSError("no data here")
'''


@pytest.fixture
def mine(tmp_path, monkeypatch):
    (tmp_path / "mine_model.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("mine_model", None)


def test_round_trip_profile_file_simulate_advise_train(mine, capsys):
    assert main(["profile", "--model", "mine_model:build", "--input", "3x8x8", "--batch", "16",
                 "--steps", "3", "--warmup", "1", "--out", "mine.json"]) == 0
    printed = capsys.readouterr().out
    assert "measured_share" in printed and "flops_share" in printed and "wrote mine.json" in printed
    prof = sim.load_profile(mine / "mine.json")
    assert prof.names == ("0", "4", "6") and prof.batch == 16 and prof.about["model"] == "mine_model:build"

    assert main(["simulate", "--profile", "mine.json", "--gpus", "8", "--net", "tcp-25GbE"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert printed.startswith("measured on cpu (1 thread")
    assert "each worker is simulated as that CPU" in printed and "speedup over one GPU" in printed
    assert "mine.json on 2 node(s) x 4 GPUs" in printed
    assert re.search(r"each worker holds [0-9.e-]+ GB at batch 16 with momentum SGD: parameters", printed)
    assert main(["simulate", "--profile", "mine.json", "--gpus", "8", "--device", "v100"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert printed.startswith("measured on cpu (1 thread), mapped to v100 by a roofline per operator")

    assert main(["advise", "--profile", "mine.json", "--gpus", "8", "--net", "tcp-25GbE", "--top", "3"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "each worker is checked against 80 GB of GPU memory (no --device named: an 80 GB GPU assumed" in printed
    assert re.search(r"from the measurement \(mine.json: (wall time|thread CPU time) per layer on cpu", printed)
    assert "from the models: each message's time on the links" in printed
    command = printed.split("to train the first row: ")[1]
    assert command.startswith("python -m commlab train --model mine_model:build --data YOUR_LOADER")
    assert "--profile mine.json --batch-size 16 --net tcp-25GbE" in command
    # with the loader recorded by profile --data, the command runs as printed (a few steps of it here)
    assert main(["profile", "--model", "mine_model:build", "--input", "3x8x8", "--batch", "16", "--steps", "2",
                 "--warmup", "1", "--data", "mine_model:data", "--out", "mine.json"]) == 0
    capsys.readouterr()
    assert main(["advise", "--profile", "mine.json", "--gpus", "8", "--net", "tcp-25GbE", "--top", "3"]) == 0
    command = " ".join(capsys.readouterr().out.split()).split("to train the first row: ")[1]
    assert "YOUR_LOADER" not in command
    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "commlab"]
    out = mine / "run.csv"
    assert main([*words[3:], "--steps", "4", "--eval-every", "2", "--out", str(out), "--no-progress"]) == 0
    assert "4 steps: final loss" in capsys.readouterr().out and out.exists()


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


@pytest.mark.parametrize("args, says", [
    (["train", "--model", "no_such_module:build", "--out", "r.csv"], "cannot import 'no_such_module'"),
    (["train", "--model", "mine_model:nothing", "--out", "r.csv"], "module 'mine_model' has no 'nothing'"),
    (["train", "--model", "mine_model:NOT_A_FUNCTION", "--out", "r.csv"], "is not a function"),
    (["train", "--data", "mine_model:NOT_A_FUNCTION", "--out", "r.csv"], "returned int"),
    (["profile", "--model", "mine_model:build", "--input", "3x8", "--out", "p.json"], "failed on an input of shape"),
    (["profile", "--model", "mine_model:build", "--input", "axb", "--out", "p.json"], "one sample's shape"),
    (["profile", "--model", "mine_model:build", "--input", "3x8x8", "--out", "p.txt"], "must end in .json"),
    (["simulate", "--profile", "missing.json"], "--profile: no profile file 'missing.json'"),
    (["advise", "--profile", "mine_model.py"], "--profile: unknown model|not a profile file"),
    (["simulate", "--profile", "p.json", "--model", "resnet50"], "give --model or --profile, not both"),
    (["profile", "--model", "mine_model:raises", "--input", "4", "--out", "p.json"],
     "the builder raised RuntimeError: boom in the builder"),
    (["profile", "--model", "mine_model:two_arguments", "--input", "4", "--out", "p.json"],
     "takes width, depth; a builder takes no argument, or one: the data set"),
    (["train", "--model", "mine_model:forty_two", "--out", "r.csv"], "returned int, not an nn.Module"),
    (["train", "--data", "mine_model:loader_raises", "--out", "r.csv"], "the loader raised OSError: no data here"),
    (["profile", "--model", "mine_model:build", "--input", "3x8x8", "--out", "."], "must end in .json"),
    (["advise", "--profile", "p.json", "--batch", "0"], "--batch 0 sets the sequences per step of a large model"),
    (["advise", "--device", "v100"], "--device maps a measured profile"),
    (["simulate", "--profile", "p.json", "--device", "tpu"], "invalid choice: 'tpu'"),
])
def test_bad_names_end_with_status_2_and_the_reason(mine, capsys, args, says):
    if "p.json" in args and args[0] in ("simulate", "advise"):  # a valid profile to go with the bad flag
        assert main(["profile", "--model", "mine_model:build", "--input", "3x8x8", "--batch", "4", "--steps", "1",
                     "--warmup", "0", "--out", "p.json"]) == 0
        capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    assert re.search(says, capsys.readouterr().err)


def test_train_with_a_profile_charges_its_compute_as_simulate_does(mine, capsys):
    assert main(["profile", "--model", "mine_model:build", "--input", "3x8x8", "--batch", "16", "--steps", "3",
                 "--warmup", "1", "--out", "mine.json"]) == 0
    out = mine / "run.csv"
    assert main(["train", "--model", "mine_model:build", "--data", "mine_model:data", "--workers", "4",
                 "--net", "10GbE", "--profile", "mine.json", "--batch-size", "16", "--steps", "4",
                 "--eval-every", "4", "--out", str(out), "--no-progress"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "the simulated clock charges a step" in printed and "measured on cpu (1 thread" in printed
    import pandas as pd

    history = pd.read_csv(out)
    trained = history["sim_time"].iloc[-1] / 4
    simulated = sim.iteration(sim.load_profile(mine / "mine.json"), sim.Cluster(4, 1, inter="10GbE"),
                              schedule="none").time
    # the same compute and the same ring all-reduce of the same gradient: within 10%
    assert abs(trained / simulated - 1) < 0.10, (trained, simulated)
    with pytest.raises(SystemExit):
        main(["train", "--model", "mine_model:build", "--data", "mine_model:data", "--profile", "mine.json",
              "--out", str(out)])
    assert "give --net too" in capsys.readouterr().err
