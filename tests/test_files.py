"""commlab.files.write_atomic: a file is written whole or not at all, with an ordinary file's mode."""
import os
import stat

import pytest

from commlab.files import write_atomic


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_text_bytes_and_a_writer_function(tmp_path):
    assert write_atomic(tmp_path / "out" / "a.txt", "one\n").read_text() == "one\n"
    assert write_atomic(tmp_path / "out" / "b.bin", b"\x00\x01").read_bytes() == b"\x00\x01"
    write_atomic(tmp_path / "out" / "c.csv", lambda path: open(path, "w").write("x\n1\n"))
    assert (tmp_path / "out" / "c.csv").read_text() == "x\n1\n"
    assert sorted(os.listdir(tmp_path / "out")) == ["a.txt", "b.bin", "c.csv"]


def test_the_mode_is_an_ordinary_files_or_the_one_given(tmp_path):
    old = os.umask(0o027)
    try:
        assert _mode(write_atomic(tmp_path / "a", "x")) == 0o640
    finally:
        os.umask(old)
    assert _mode(write_atomic(tmp_path / "b", "x", mode=0o600)) == 0o600


def test_a_failed_write_leaves_the_old_file_and_nothing_else(tmp_path):
    write_atomic(tmp_path / "g.csv", "a\n1\n")

    def broken(path):
        open(path, "w").write("a\n")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic(tmp_path / "g.csv", broken)
    assert os.listdir(tmp_path) == ["g.csv"] and (tmp_path / "g.csv").read_text() == "a\n1\n"
