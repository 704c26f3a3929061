"""commlab.cli.profile and the command line for your own model: a model and a loader that are not
in the registry, written to a module here, go the whole round trip profile -> file -> simulate ->
advise -> train as the README's tour writes it, and profile refuses a bad builder, input or output
with the reason."""
import os
import re
import shlex

import pytest

from commlab import sim
from commlab.cli import main
from own_model_fixture import mine  # noqa: F401  (a module of your own model)

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
    assert main(["advise", "--profile", "mine.json", "--gpus", "8", "--net", "tcp-25GbE", "--top", "3",
                 "--device", "v100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2] == "to train the first row:"  # the command on a line of its own, unwrapped: pasted whole
    command = lines[-1]
    assert "YOUR_LOADER" not in command and command.endswith("--net tcp-25GbE --device v100")
    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "commlab"]
    out = mine / "run.csv"
    assert main([*words[3:], "--steps", "4", "--eval-every", "2", "--out", str(out), "--no-progress"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "4 steps: final loss" in printed and out.exists()
    assert "mapped to v100 by a roofline" in printed  # the step advice ranked, not the CPU's


@pytest.mark.parametrize("args, says", [
    (["profile", "--model", "mine_model:build", "--input", "3x8", "--out", "p.json"], "failed on an input of shape"),
    (["profile", "--model", "mine_model:build", "--input", "axb", "--out", "p.json"], "one sample's shape"),
    (["profile", "--model", "mine_model:build", "--input", "3x8x8", "--out", "p.txt"], "must end in .json"),
    (["profile", "--model", "mine_model:raises", "--input", "4", "--out", "p.json"],
     "the builder raised RuntimeError: boom in the builder"),
    (["profile", "--model", "mine_model:two_arguments", "--input", "4", "--out", "p.json"],
     "takes width, depth; a builder takes no argument, or one: the data set"),
    (["profile", "--model", "mine_model:build", "--input", "3x8x8", "--out", "."], "'.' is a folder; name a file"),
    (["profile", "--model", "mine_model:build", "--input", "3x8x8", "--out", "d.json"],
     "--out 'd.json' is a folder; name a file in it, ending in .json"),
    (["profile", "--model", "broken_model:build", "--input", "4", "--out", "p.json"],
     "--model 'broken_model:build': importing 'broken_model' raised RuntimeError: broken at import"),
    (["profile", "--model", "mine_model:forty_two", "--input", "4", "--out", "p.json"],
     "--model 'mine_model:forty_two' returned int, not an nn.Module"),
])
def test_bad_names_end_with_status_2_and_the_reason(mine, capsys, args, says):
    (mine / "d.json").mkdir()
    (mine / "broken_model.py").write_text("raise RuntimeError('broken at import')\n")
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert re.search(says, err.splitlines()[-1]) and "Traceback" not in err
    assert sorted(os.listdir(mine)) == ["broken_model.py", "d.json", "mine_model.py"]  # nothing written


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc, where no file can be created")
def test_an_output_where_no_file_can_be_created_is_refused_before_measuring(mine, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["profile", "--model", "mine_model:build", "--input", "3x8x8", "--out", "/proc/p.json"])
    assert stop.value.code == 2 and "no file can be created in '/proc'" in capsys.readouterr().err


ROOT_PARAMETER = '''
import torch
from torch import nn


class Positional(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 8)
        self.pos = nn.Parameter(torch.zeros(1, 6, 8))  # on the root module
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head((self.embed(x) + self.pos).mean(dim=1))


def build():
    torch.manual_seed(0)
    return Positional()
'''


def test_the_root_modules_parameters_are_named_and_the_furthest_share_is_legible(mine, capsys):
    """The root's own parameters are a layer named "" in the file, shown by what they are; a
    layer with a sliver of the FLOPs shows its share in significant digits, not 0.0%."""
    (mine / "positional.py").write_text(ROOT_PARAMETER)
    assert main(["profile", "--model", "positional:build", "--input", "6", "--vocab", "50", "--batch", "4",
                 "--steps", "2", "--warmup", "1", "--out", "pos.json"]) == 0
    out = capsys.readouterr().out
    rows = out.split("\n\n")[0].splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["(the", "embed", "head"]
    assert sim.load_profile(mine / "pos.json").names == ("", "embed", "head")
    furthest = re.search(r"furthest from its FLOP share: (\S+) \(([0-9.e+-]+)% of the step, ([0-9.e+-]+)% of the "
                         r"FLOPs, ([0-9.e+-]+) times its share\)", out)
    assert furthest and float(furthest[3]) > 0 and float(furthest[4]) > 0


def test_help_reads_as_plain_text(capsys):
    with pytest.raises(SystemExit):
        main(["profile", "--help"])
    out = capsys.readouterr().out
    assert "pkg.module:name" in out and "``" not in out and ":func:" not in out and ":mod:" not in out
