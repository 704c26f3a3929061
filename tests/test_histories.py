"""Reorganising the code changes no result: the Histories of tests/history_cases.py, exactly
where no CPU can change them and within a stated float tolerance elsewhere (against the record
made on another machine), bit for bit against a snapshot of this machine when one was taken,
and bit for bit between two runs of the same seed."""
import pytest

import history_cases as cases

_, RECORDED = cases.load()


def test_every_case_is_recorded():
    assert sorted(RECORDED) == sorted(cases.CASES)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_history_unchanged(name):
    # the committed record within its tolerance, whatever its machine key says: two CPUs that both
    # report AVX2 (and the same torch) still round differently (another MKL path), so a key is no
    # proof that the record's bits can be made here; bit for bit is the snapshot's test below
    problems = cases.differences(name, cases.run(name), RECORDED[name])
    assert not problems, "\n".join(problems)


def _snapshot():
    if not cases.SNAPSHOT.exists():
        return None
    machine, snap = cases.load(cases.SNAPSHOT)
    return snap if machine == cases.machine() and sorted(snap) == sorted(cases.CASES) else None


@pytest.mark.skipif(_snapshot() is None, reason="no snapshot of this machine's bits "
                                                "(python tests/history_cases.py --snapshot takes one)")
@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_history_bit_for_bit_against_this_machines_snapshot(name):
    problems = cases.differences(name, cases.run(name), _snapshot()[name], exact=True)
    assert not problems, "\n".join(problems) + f"\n(snapshot: {cases.SNAPSHOT}; delete it or take it again " \
                                               "if the change is meant to change results)"


@pytest.mark.parametrize("name", ["bsp_ring_topk_ef", "bsp_ps_gloo", "asp", "choco_topk_ring"])
def test_the_same_seed_twice_gives_the_same_bits(name):
    assert cases.run(name) == cases.run(name)


def test_tolerance_passes_rounding_and_fails_a_real_change():
    was = RECORDED["bsp_native"]
    nudged = dict(was, loss=[x * (1 + 3e-7) for x in was["loss"]])
    assert cases.differences("bsp_native", nudged, was) == []
    assert cases.differences("bsp_native", nudged, was, exact=True)
    moved = dict(was, loss=[x * 1.001 for x in was["loss"]])
    assert cases.differences("bsp_native", moved, was)
    more_bytes = dict(was, bytes_sent=[[b + 1 for b in row] for row in was["bytes_sent"]])
    assert "compared exactly" in cases.differences("bsp_native", more_bytes, was)[0]
