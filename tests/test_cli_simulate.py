"""commlab.cli.simulate: ``python -m commlab simulate`` prints the iteration and the speedup table
from 1 GPU up; a bad model or method ends with status 2 and the valid choices."""
import pytest

from commlab.cli import main


def test_simulate_prints_the_iteration_and_the_speedups(capsys):
    assert main(["simulate", "--model", "resnet50", "--gpus", "8", "--net", "100GbIB", "--method", "mg_wfbp"]) == 0
    out = capsys.readouterr().out
    assert "ms per iteration" in out and "speedup over one GPU" in out
    table = out.split("speedup over one GPU")[1]
    rows = [line.split() for line in table.splitlines() if line.strip()[:1].isdigit()]
    assert [int(row[0]) for row in rows] == [1, 2, 4, 8] and float(rows[0][1]) == 1.0


@pytest.mark.parametrize("args,message", [
    (["--model", "resnet5"], "valid: resnet50, bert-base, bert-large"),
    (["--method", "fast"], "invalid choice: 'fast'"),
])
def test_bad_input_exits_2_naming_the_choices(capsys, args, message):
    with pytest.raises(SystemExit) as e:
        main(["simulate", *args])
    assert e.value.code == 2 and message in capsys.readouterr().err
