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
