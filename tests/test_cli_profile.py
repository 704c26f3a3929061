"""commlab.cli.profile and the command line for your own model: a model and a loader that are not
in the registry, written to a module here, go the whole round trip profile -> file -> simulate ->
advise -> train as the README's tour writes it, and profile refuses a bad builder, input or output
with the reason."""
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
    assert main(["advise", "--profile", "mine.json", "--gpus", "8", "--net", "tcp-25GbE", "--top", "3"]) == 0
    command = " ".join(capsys.readouterr().out.split()).split("to train the first row: ")[1]
    assert "YOUR_LOADER" not in command
    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "commlab"]
    out = mine / "run.csv"
    assert main([*words[3:], "--steps", "4", "--eval-every", "2", "--out", str(out), "--no-progress"]) == 0
    assert "4 steps: final loss" in capsys.readouterr().out and out.exists()


@pytest.mark.parametrize("args, says", [
    (["profile", "--model", "mine_model:build", "--input", "3x8", "--out", "p.json"], "failed on an input of shape"),
    (["profile", "--model", "mine_model:build", "--input", "axb", "--out", "p.json"], "one sample's shape"),
    (["profile", "--model", "mine_model:build", "--input", "3x8x8", "--out", "p.txt"], "must end in .json"),
    (["profile", "--model", "mine_model:raises", "--input", "4", "--out", "p.json"],
     "the builder raised RuntimeError: boom in the builder"),
    (["profile", "--model", "mine_model:two_arguments", "--input", "4", "--out", "p.json"],
     "takes width, depth; a builder takes no argument, or one: the data set"),
    (["profile", "--model", "mine_model:build", "--input", "3x8x8", "--out", "."], "must end in .json"),
])
def test_bad_names_end_with_status_2_and_the_reason(mine, capsys, args, says):
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    assert re.search(says, capsys.readouterr().err)
