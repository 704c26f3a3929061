"""commlab.cli.train: ``python -m commlab train`` (in a subprocess, and in-process) writes the
History and its plot, both or neither; bad input, your own model's included, ends with status 2
and the valid choices before anything runs, leaving nothing behind; a profile file charges a step
its measured compute, as simulate does."""
import os
import subprocess
import sys

import pandas as pd
import pytest

from commlab import sim
from commlab.cli import main
from own_model_fixture import mine  # noqa: F401  (a module of your own model)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, cwd=None):
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "commlab", *args], capture_output=True, text=True, cwd=cwd or ROOT,
                          env=env, timeout=300)


def test_train_writes_the_history_and_a_plot(tmp_path):
    out = tmp_path / "run.csv"
    r = run("train", "--model", "mlp", "--data", "digits", "--workers", "2", "--compress", "topk(0.1)+ef",
            "--net", "10GbE", "--steps", "6", "--eval-every", "3", "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    frame = pd.read_csv(out, index_col="step")
    assert list(frame.index) == [1, 2, 3, 4, 5, 6] and frame["sim_time"].is_monotonic_increasing
    assert (tmp_path / "run.png").stat().st_size > 1000
    assert "6 steps: final loss" in r.stdout and "simulated s" in r.stdout
    assert sorted(os.listdir(tmp_path)) == ["run.csv", "run.png"]  # no partial files left


@pytest.mark.parametrize("args,message", [
    (["train", "--model", "mlpp"], "--model 'mlpp' is unknown; valid: mlp, cnn"),
    (["train", "--sync", "bspp"], "bspp"),
    (["train", "--compress", "topk(2)"], "topk"),
    (["train", "--net", "5GbE"], "unknown link '5GbE'"),
    (["train", "--steps", "0"], "--steps 0 must be >= 1"),
    (["train", "--out", "run.txt"], "--out 'run.txt' must end in .csv or .parquet"),
    (["train", "--out", "/nonexistent_dir/x.csv"], "the folder '/nonexistent_dir' does not exist"),
    (["train", "--plot", "/nonexistent_dir/p.png"], "--plot '/nonexistent_dir/p.png': the folder"),
    (["train", "--plot", "p.txt"], "--plot 'p.txt' must end in .png"),
    (["train", "--out", "r.csv", "--plot", "r.csv"], "must end in .png"),
    (["train", "--runtime", "mpi"], "invalid choice: 'mpi'"),
    (["train", "--compress-per", "layer"], "invalid choice: 'layer' (choose from 'bucket', 'tensor')"),
    (["train", "--compress-per", "tensor"], "compress_per='tensor' cuts compressed gradients into messages, but "
                                            "compress=None"),
    (["train", "--compress-per", "tensor", "--compress", "fp16", "--arch", "ps"],
     "compress_per='tensor': arch='ps' compresses its fused buffer's pieces"),
    (["train", "--wokers", "4"], "unrecognized arguments: --wokers"),
])
def test_bad_input_exits_2_naming_the_choices(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)  # in-process (fast): the same parser and checks as the subprocess
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    assert message in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_divergence_is_reported_and_nothing_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--lr", "1e30", "--steps", "5", "--workers", "2", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "bsp diverged at step" in err and "on worker" in err and "lower lr (now --lr 1e+30)" in err
    assert os.listdir(tmp_path) == []


def test_an_unwritable_output_is_refused_before_training(tmp_path, monkeypatch, capsys):
    """--out names a folder (a path no file can take, even for root): refused at once, nothing run."""
    import time

    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.csv").mkdir()
    start = time.monotonic()
    with pytest.raises(SystemExit) as e:
        main(["train", "--steps", "500", "--out", "x.csv", "--no-progress"])
    assert e.value.code == 2 and "--out 'x.csv' is a folder; name a file in it" in capsys.readouterr().err
    assert time.monotonic() - start < 5 and sorted(os.listdir(tmp_path)) == ["x.csv"]


def test_outputs_are_written_all_or_none(tmp_path, monkeypatch, capsys):
    """The plot fails after the History was written aside: neither file is left behind."""
    import commlab.cli.train as train

    monkeypatch.chdir(tmp_path)

    def broken(frame, path, title):
        raise OSError("No space left on device")

    monkeypatch.setattr(train, "_plot", broken)
    assert main(["train", "--steps", "2", "--workers", "2", "--no-progress", "--out", "r.csv"]) == 1
    assert "nothing written" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.parametrize("args, says", [
    (["--model", "no_such_module:build"], "cannot import 'no_such_module'"),
    (["--model", "mine_model:nothing"], "module 'mine_model' has no 'nothing'"),
    (["--model", "mine_model:NOT_A_FUNCTION"], "is not a function"),
    (["--data", "mine_model:NOT_A_FUNCTION"], "returned int"),
    (["--model", "mine_model:forty_two"], "returned int, not an nn.Module"),
    (["--data", "mine_model:loader_raises"], "the loader raised OSError: no data here"),
])
def test_your_own_model_and_data_are_refused_with_the_reason(mine, capsys, args, says):
    with pytest.raises(SystemExit) as stop:
        main(["train", *args, "--out", "r.csv"])
    assert stop.value.code == 2 and says in capsys.readouterr().err
    assert sorted(os.listdir(mine)) == ["mine_model.py"]


def test_train_with_a_profile_charges_its_compute_as_simulate_does(mine, capsys):
    assert main(["profile", "--model", "mine_model:build", "--input", "3x8x8", "--batch", "16", "--steps", "3",
                 "--warmup", "1", "--out", "mine.json"]) == 0
    out = mine / "run.csv"
    assert main(["train", "--model", "mine_model:build", "--data", "mine_model:data", "--workers", "4",
                 "--net", "10GbE", "--profile", "mine.json", "--batch-size", "16", "--steps", "4",
                 "--eval-every", "4", "--out", str(out), "--no-progress"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "the simulated clock charges a step" in printed and "measured on cpu (1 thread" in printed
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


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc, where no file can be created")
def test_an_output_where_no_file_can_be_created_is_refused_before_training(tmp_path, monkeypatch, capsys):
    """A folder whose permission bits allow writing (always, for root) but where no file can be
    created: tried at once, nothing run."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["train", "--steps", "500", "--out", "/proc/x.csv", "--no-progress"])
    assert e.value.code == 2 and "--out '/proc/x.csv' cannot be written: no file can be created in '/proc'" in \
        capsys.readouterr().err
    assert os.listdir(tmp_path) == []


IMPORT_FAILS = "import torch\nraise RuntimeError('broken at import')\n"


@pytest.mark.parametrize("args, says", [
    (["--model", "mine_model:build", "--data", "tokens"],
     "--model 'mine_model:build' does not run on --data 'tokens': a batch of shape (1, 16) (torch.int64) raised "
     "RuntimeError: "),
    (["--model", "mine_model:build", "--data", "digits"],
     "--model 'mine_model:build' does not run on --data 'digits': a batch of shape (1, 64) (torch.float32)"),
    (["--model", "broken_model:build", "--data", "mine_model:data"],
     "--model 'broken_model:build': importing 'broken_model' raised RuntimeError: broken at import"),
])
def test_a_model_that_cannot_run_on_the_data_or_be_imported_exits_2(mine, capsys, args, says):
    """A CNN given another shape of data, and a module that raises on import: one line with the
    cause, status 2, before the Trainer starts, no traceback, nothing written."""
    (mine / "broken_model.py").write_text(IMPORT_FAILS)
    with pytest.raises(SystemExit) as stop:
        main(["train", *args, "--steps", "2", "--out", "r.csv", "--no-progress"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and says in err.splitlines()[-1] and "Traceback" not in err
    assert sorted(os.listdir(mine)) == ["broken_model.py", "mine_model.py"]
