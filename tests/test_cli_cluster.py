"""commlab.cli.cluster: the cluster and the model (a built-in name or a profile file) that
simulate and advise read from their flags; a cluster that is not whole nodes, an unknown link, or a
profile that cannot be read ends with status 2 and the reason."""
import re

import pytest

from commlab.cli import main
from own_model_fixture import mine  # noqa: F401  (a module of your own model)


@pytest.mark.parametrize("args,message", [
    (["simulate", "--gpus", "3", "--gpus-per-node", "4"], "for one node of 3 GPUs give --gpus-per-node 3"),
    (["simulate", "--gpus", "6", "--gpus-per-node", "4"], "must be a multiple of --gpus-per-node 4"),
    (["advise", "--gpus", "0"], "--gpus 0 must be >= 1"),
    (["simulate", "--net", "warp"], "unknown link 'warp'"),
    (["advise", "--device", "v100"], "--device maps a measured profile"),
])
def test_a_bad_cluster_exits_2_with_the_reason(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("args, says", [
    (["simulate", "--profile", "missing.json"], "--profile: no profile file 'missing.json'"),
    (["advise", "--profile", "mine_model.py"], "--profile: unknown model|not a profile file"),
    (["simulate", "--profile", "p.json", "--model", "resnet50"], "give --model or --profile, not both"),
    (["simulate", "--profile", "p.json", "--device", "tpu"], "invalid choice: 'tpu'"),
])
def test_a_bad_profile_exits_2_with_the_reason(mine, capsys, args, says):
    assert main(["profile", "--model", "mine_model:build", "--input", "3x8x8", "--batch", "4", "--steps", "1",
                 "--warmup", "0", "--out", "p.json"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    assert re.search(says, capsys.readouterr().err)
