"""commlab.cli.rules: ``python -m commlab rules`` prints commlab.rules' tables as they are."""
from commlab import rules
from commlab.cli import main


def test_rules_prints_the_tables(capsys):
    assert main(["rules"]) == 0
    assert capsys.readouterr().out == rules.markdown()
