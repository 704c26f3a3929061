"""commlab.cli.advise: ``python -m commlab advise`` prints the ranking, why the first is first and
what was left out, in sentences wrapped for a book's column; bad input ends with status 2 and the
reason."""
import pytest

from commlab.cli import main


def test_advise_prints_the_ranking_and_its_reasons(capsys):
    assert main(["advise", "--model", "resnet50", "--gpus", "8", "--net", "10GbE", "--target", "100", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "configurations" in out and "why the first is first: compute" in out and "not ranked: ssp, asp" in out
    rows = [line for line in out.splitlines() if line[:1].isdigit()]
    assert len(rows) == 3
    sentences = [line for line in out.splitlines() if line not in rows and not line.startswith(" " * 8)]
    assert max(map(len, sentences)) <= 100  # the report's sentences are wrapped for a book's column


@pytest.mark.parametrize("args,message", [
    (["advise", "--top", "0"], "--top 0 must be >= 1"),
    (["advise", "--top", "-3"], "--top -3 must be >= 1"),
    (["advise", "--batch", "0"], "--batch 0 sets the sequences per step of a large model"),
    (["advise", "--model", "vgg"], "--model 'vgg' is unknown; valid: resnet50"),
    (["advise", "--model", "gpt3-175b", "--gpus", "16", "--gpus-per-node", "8"], "cannot be placed on 16 GPUs"),
    (["advise", "--target", "0"], "target=0 must be a number of rounds"),
    (["advise", "--budget", "0.0001"], "no configuration reaches the target within budget"),
])
def test_advise_refusals_exit_2(capsys, args, message):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_a_batch_for_a_profile_is_refused_before_anything_is_printed(tmp_path, capsys):
    from commlab import sim

    path = sim.save_profile(sim.profile("resnet50"), tmp_path / "r.json")
    with pytest.raises(SystemExit) as e:
        main(["advise", "--profile", str(path), "--batch", "0"])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == "" and "a profile has its own batch" in err.splitlines()[-1]


@pytest.mark.parametrize("gpus, link", [(8, "NVLink"), (16, "tcp-25GbE")])
def test_the_train_command_takes_the_link_its_workers_meet_on(tmp_path, capsys, gpus, link):
    """The Trainer's clock has one link: one node of 8 GPUs meets on NVLink (the link advise timed),
    two nodes on the link between them."""
    import dataclasses

    from commlab import sim

    counted = sim.profile("resnet50")
    about = {"measured": "thread CPU time per layer", "device": "cpu (1 thread)", "torch": "2", "input": "(1,)",
             "batch": counted.batch, "model": "mine_model:build", "data": "mine_model:data"}
    path = sim.save_profile(dataclasses.replace(counted, about=about), tmp_path / "r.json")
    assert main(["advise", "--profile", str(path), "--gpus", str(gpus), "--gpus-per-node", "8", "--intra", "NVLink",
                 "--net", "tcp-25GbE", "--top", "1"]) == 0
    command = capsys.readouterr().out.splitlines()[-1]
    assert command.startswith("python -m commlab train --model mine_model:build --data mine_model:data")
    assert command.endswith(f"--net {link}")
