"""The contract of every exercise check function: it prints and never raises. Unanswered
(None) says "not answered yet"; the right answer "correct"; a wrong one "not yet"; a
string where a number belongs "expected a number"."""


def assert_unanswered(check, capsys) -> None:
    assert check(None) is False
    assert "not answered yet" in capsys.readouterr().out


def assert_check_contract(check, right, wrong, capsys) -> None:
    assert_unanswered(check, capsys)
    assert check(right) is True
    assert "correct" in capsys.readouterr().out
    assert check(wrong) is False
    assert "not yet" in capsys.readouterr().out
    assert check("many") is False
    assert "expected a number" in capsys.readouterr().out
