"""commlab.cli, run as ``python -m commlab`` in a subprocess: train writes the History and its
plot, simulate prints the iteration and the speedup table, --help names every choice, and bad
input ends with status 2 and the valid choices, leaving nothing behind."""
import os
import subprocess
import sys

import pandas as pd
import pytest

from commlab.cli import main

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


def test_simulate_prints_the_iteration_and_the_speedups():
    r = run("simulate", "--model", "resnet50", "--gpus", "8", "--net", "100GbIB", "--method", "mg_wfbp")
    assert r.returncode == 0, r.stderr
    assert "ms per iteration" in r.stdout and "speedup over one GPU" in r.stdout
    table = r.stdout.split("speedup over one GPU")[1]
    rows = [line.split() for line in table.splitlines() if line.strip()[:1].isdigit()]
    assert [int(row[0]) for row in rows] == [1, 2, 4, 8] and float(rows[0][1]) == 1.0


def test_help_names_every_dimension():
    r = run("train", "--help")
    assert r.returncode == 0
    for name in ("ssp", "dpsgd", "ring", "ps", "topk", "qsgd", "mg_wfbp", "digits", "10GbE"):
        assert name in r.stdout
    assert "mg_wfbp" in run("simulate", "--help").stdout


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
    (["simulate", "--gpus", "3", "--gpus-per-node", "4"], "for one node of 3 GPUs give --gpus-per-node 3"),
    (["advise", "--top", "0"], "--top 0 must be >= 1"),
    (["advise", "--top", "-3"], "--top -3 must be >= 1"),
    (["train", "--runtime", "mpi"], "invalid choice: 'mpi'"),
    (["train", "--compress-per", "layer"], "invalid choice: 'layer' (choose from 'bucket', 'tensor')"),
    (["train", "--compress-per", "tensor"], "compress_per='tensor' cuts compressed gradients into messages, but "
                                            "compress=None"),
    (["train", "--compress-per", "tensor", "--compress", "fp16", "--arch", "ps"],
     "compress_per='tensor': arch='ps' compresses its fused buffer's pieces"),
    (["train", "--wokers", "4"], "unrecognized arguments: --wokers"),
    (["simulate", "--model", "resnet5"], "valid: resnet50, bert-base, bert-large"),
    (["simulate", "--method", "fast"], "invalid choice: 'fast'"),
    (["simulate", "--gpus", "6", "--gpus-per-node", "4"], "must be a multiple of --gpus-per-node 4"),
    (["simulate", "--net", "warp"], "unknown link 'warp'"),
])
def test_bad_input_exits_2_naming_the_choices(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)  # in-process (fast): the same parser and checks as the subprocess
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    assert message in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_bad_input_as_a_subprocess(tmp_path):
    r = run("train", "--sync", "bspp", cwd=tmp_path)
    assert r.returncode == 2 and "bspp" in r.stderr and os.listdir(tmp_path) == []


def test_advise_prints_the_ranking_and_its_reasons(capsys):
    assert main(["advise", "--model", "resnet50", "--gpus", "8", "--net", "10GbE", "--target", "100", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "configurations" in out and "why the first is first: compute" in out and "not ranked: ssp, asp" in out
    rows = [line for line in out.splitlines() if line[:1].isdigit()]
    assert len(rows) == 3
    sentences = [line for line in out.splitlines() if line not in rows and not line.startswith(" " * 8)]
    assert max(map(len, sentences)) <= 100  # the report's sentences are wrapped for a book's column


@pytest.mark.parametrize("args,message", [
    (["advise", "--model", "vgg"], "--model 'vgg' is unknown; valid: resnet50"),
    (["advise", "--model", "gpt3-175b", "--gpus", "16", "--gpus-per-node", "8"], "cannot be placed on 16 GPUs"),
    (["advise", "--target", "0"], "target=0 must be a number of rounds"),
    (["advise", "--budget", "0.0001"], "no configuration reaches the target within budget"),
])
def test_advise_refusals_exit_2(capsys, args, message):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2 and message in capsys.readouterr().err


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
    assert e.value.code == 2 and "--out 'x.csv' cannot be written" in capsys.readouterr().err
    assert time.monotonic() - start < 5 and sorted(os.listdir(tmp_path)) == ["x.csv"]


def test_outputs_are_written_all_or_none(tmp_path, monkeypatch, capsys):
    """The plot fails after the History was written aside: neither file is left behind."""
    import commlab.cli as cli

    monkeypatch.chdir(tmp_path)

    def broken(frame, path, title):
        raise OSError("No space left on device")

    monkeypatch.setattr(cli, "_plot", broken)
    assert main(["train", "--steps", "2", "--workers", "2", "--no-progress", "--out", "r.csv"]) == 1
    assert "nothing written" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == []
