"""commlab.cli.cluster: the cluster and the model (a built-in name or a profile file) that
simulate and advise read from their flags; a cluster that is not whole nodes, an unknown link, or a
profile that cannot be read ends with status 2 and the reason; a link you measured, written
link(gbits=G, latency_us=L), is the link the cluster (or train's clock) runs on."""
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


def test_a_measured_link_is_the_link_the_cluster_runs_on(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)   # train writes run.csv and run.png here
    from commlab import sim
    from commlab.net.link import LinkModel

    assert main(["simulate", "--gpus", "8", "--gpus-per-node", "1", "--net", "link(gbits=9.4, latency_us=25)",
                 "--method", "wfbp_a2a"]) == 0
    out = capsys.readouterr().out
    link = LinkModel(25e-6, 8 / 9.4e9)
    expected = sim.iteration("resnet50", sim.Cluster(8, 1, inter=link), method="wfbp_a2a")
    assert "link(gbits=9.4, latency_us=25) between nodes" in out
    assert f"{expected.time * 1e3:.4g} ms per iteration" in out
    assert main(["train", "--model", "mlp", "--data", "digits", "--workers", "2", "--steps", "2", "--no-progress",
                 "--net", "link(gbits=1, latency_us=0)"]) == 0


@pytest.mark.parametrize("value, says", [
    ("link(gbits=0, latency_us=25)", "gbits=0 must be a finite number of Gb/s > 0"),
    ("link(gbits=9.4, latency_us=-1)", "latency_us=-1 must be a finite number of microseconds >= 0"),
    ("link(gbits='fast', latency_us=25)", "gbits='fast' must be a finite number"),
    ("link(9.4, 25)", "give link(gbits=G, latency_us=L)"),
    ("link(gbits=9.4)", "give link(gbits=G, latency_us=L)"),
    ("link(gbits=9.4, latency_us=25", "was never closed"),
])
def test_a_bad_measured_link_exits_2_with_its_form(tmp_path, monkeypatch, capsys, value, says):
    monkeypatch.chdir(tmp_path)
    for command in (["simulate", "--net", value], ["advise", "--intra", value], ["train", "--net", value]):
        with pytest.raises(SystemExit) as stop:
            main(command)
        err = capsys.readouterr().err
        assert stop.value.code == 2 and says in err and "give link(gbits=G, latency_us=L)" in err, (command, err)
