"""commlab.cli.classroom (``python -m commlab classroom``): student writes one notebook per
chapter asked for and says where; bad chapters, folders and limits end with status 2 and the
reason before anything runs. The grading run itself is in tests/test_grade.py."""
import os

import pytest

from commlab.cli import main


def test_student_writes_the_chapters_asked_for(tmp_path, capsys):
    assert main(["classroom", "student", "--out", str(tmp_path / "handout"), "--chapters", "06,1"]) == 0
    assert sorted(os.listdir(tmp_path / "handout")) == ["01_why_communication.ipynb", "06_quantization.ipynb"]
    out = capsys.readouterr().out
    assert "the student edition of 2 chapter(s)" in out and "06_quantization.ipynb" in out


@pytest.mark.parametrize("args, says", [
    (["student", "--out", "x", "--chapters", "14"], "no chapter 14; valid: 00, 01"),
    (["grade", "no-such-folder", "--out", "g.csv"], "no-such-folder is not a folder of student folders"),
    (["grade", ".", "--out", "g.csv", "--jobs", "0"], "jobs must be > 0, got 0"),
    (["grade", ".", "--out", "g.csv", "--exercise-limit", "-1"], "exercise_limit must be > 0, got -1.0"),
])
def test_bad_arguments_end_with_status_2_and_the_reason(tmp_path, capsys, monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["classroom", *args])
    assert stop.value.code == 2 and says in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_help_reads_as_plain_text(capsys):
    with pytest.raises(SystemExit):
        main(["classroom", "--help"])
    out = capsys.readouterr().out
    assert "student --out DIR" in out and "``" not in out and ":func:" not in out and ":mod:" not in out
