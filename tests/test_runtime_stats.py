"""runtime.stats: a payload's bytes are what would cross the wire; counters snapshot and subtract."""
import torch

from commlab.runtime.stats import CommStats, nbytes


def test_nbytes_is_numel_times_element_size():
    assert nbytes(torch.zeros(10)) == 40 and nbytes(torch.zeros(3, 5, dtype=torch.float16)) == 30
    assert nbytes(torch.zeros(0)) == 0 and nbytes(torch.zeros(7, dtype=torch.uint8)) == 7


def test_snapshot_difference_and_reset():
    s = CommStats()
    s.bytes_sent, s.msgs_sent = 100, 2
    before = s.snapshot()
    s.bytes_sent += 40
    s.bytes_recv += 8
    assert s - before == CommStats(bytes_sent=40, bytes_recv=8, msgs_sent=0, msgs_recv=0)
    assert before.bytes_sent == 100  # a snapshot is a copy
    s.reset()
    assert s == CommStats()
