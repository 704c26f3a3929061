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


def test_simulate_says_what_its_framework_adds_and_the_step_without_it(capsys):
    """A survey method runs as its framework runs it (Horovod's 1.08 ms a collective); the
    iteration without it is the one advise ranks and train's simulated clock charges."""
    from commlab import sim

    assert main(["simulate", "--model", "resnet50", "--gpus", "8", "--gpus-per-node", "8", "--intra", "10GbE",
                 "--net", "10GbE", "--method", "bsp_a2a"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    bare = sim.iteration("resnet50", sim.Cluster(1, 8, intra="10GbE", inter="10GbE"), method="bsp_a2a",
                         framework="ideal").time
    assert "bsp_a2a runs as horovod runs it, which adds 1.08 ms per collective" in printed
    assert f"as advise and train's simulated clock charge a step: {bare * 1e3:.4g} ms per iteration" in printed
