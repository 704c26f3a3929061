"""commlab.cli, run as ``python -m commlab`` in a subprocess: one subcommand per verb module,
--help names every choice, and a bad name ends with status 2 and the valid choices, leaving
nothing behind. Each verb has its own tests (test_cli_<verb>.py)."""
import os
import subprocess
import sys

import pytest

from commlab import cli
from commlab.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, cwd=None):
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "commlab", *args], capture_output=True, text=True, cwd=cwd or ROOT,
                          env=env, timeout=300)


def test_help_names_every_dimension():
    r = run("train", "--help")
    assert r.returncode == 0
    for name in ("ssp", "dpsgd", "ring", "ps", "topk", "qsgd", "mg_wfbp", "digits", "10GbE"):
        assert name in r.stdout
    assert "mg_wfbp" in run("simulate", "--help").stdout


def test_bad_input_as_a_subprocess(tmp_path):
    r = run("train", "--sync", "bspp", cwd=tmp_path)
    assert r.returncode == 2 and "bspp" in r.stderr and os.listdir(tmp_path) == []


def test_each_verb_module_is_one_subcommand(capsys):
    verbs = [v.NAME for v in cli.VERBS]
    assert verbs == ["train", "simulate", "advise", "rules", "profile", "classroom"]
    assert list(cli.parser()._subparsers._group_actions[0].choices) == verbs
    assert all(v.__name__ == f"commlab.cli.{v.NAME}" for v in cli.VERBS)
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2 and "{train,simulate,advise,profile,rules,classroom}" in capsys.readouterr().err
