"""The contract of every exercise check function: it prints and never raises. Unanswered
(None) says "not answered yet"; the right answer "correct"; a wrong one "not yet"; a
string where a number belongs "expected a number"."""


def assert_unanswered(check, capsys) -> None:
    assert check(None) is False
    assert "not answered yet" in " ".join(capsys.readouterr().out.split())


def assert_check_contract(check, right, wrong, capsys) -> None:
    assert_unanswered(check, capsys)
    assert check(right) is True
    assert "correct" in " ".join(capsys.readouterr().out.split())
    assert check(wrong) is False
    assert "not yet" in " ".join(capsys.readouterr().out.split())
    assert check("many") is False
    assert "expected a number" in " ".join(capsys.readouterr().out.split())
