"""commlab.parallel.layout: parsing, Megatron's rank order, the three groups, and refusals."""
import pytest

from commlab.parallel.layout import Layout

SHAPE = dict(layers=2, heads=2, hidden=32, ffn=128)


def test_parse_fills_missing_degrees_with_one():
    assert Layout.parse("tp=2") == Layout(dp=1, tp=2, pp=1)
    lay = Layout.parse("dp=2, tp=2, pp=2, micro_batches=4, schedule=gpipe")
    assert (lay.dp, lay.tp, lay.pp, lay.micro_batches, lay.schedule) == (2, 2, 2, 4, "gpipe")
    assert Layout.parse(str(lay)) == lay and lay.world == 8
    sp = Layout.parse("tp=2,sequence_parallel=1")
    assert sp.sequence_parallel and Layout.parse(str(sp)) == sp


@pytest.mark.parametrize("spec, words", [
    ("dp=2,xp=2", ["'xp=2'", "dp=...", "micro_batches=..."]),
    ("dp=two", ["dp='two'", "integer >= 1"]),
    ("dp=0", ["dp=0", ">= 1"]),
    ("dp=2,dp=2", ["dp twice"]),
    ("schedule=zigzag", ["zigzag", "gpipe", "1f1b"]),
    ("", ["dp=2,tp=2,pp=2"]),
])
def test_bad_specs_name_the_valid_choices(spec, words):
    with pytest.raises(ValueError) as e:
        Layout.parse(spec)
    for w in words:
        assert w in str(e.value)


def test_rank_order_is_tp_then_dp_then_pp_and_coords_invert_it():
    lay = Layout(dp=2, tp=2, pp=3)
    seen = set()
    for r in range(lay.world):
        d, t, s = lay.coords(r)
        assert lay.rank(d, t, s) == r
        seen.add((d, t, s))
    assert len(seen) == lay.world
    assert lay.coords(1) == (0, 1, 0) and lay.coords(2) == (1, 0, 0) and lay.coords(4) == (0, 0, 1)


@pytest.mark.parametrize("kind, size", [("tp", 2), ("dp", 3), ("pp", 2)])
def test_groups_partition_the_ranks_and_differ_in_one_coordinate(kind, size):
    lay = Layout(dp=3, tp=2, pp=2)
    axis = {"dp": 0, "tp": 1, "pp": 2}[kind]
    groups = {tuple(lay.members(r, kind)) for r in range(lay.world)}
    assert sorted(r for g in groups for r in g) == list(range(lay.world))
    for g in groups:
        assert len(g) == size
        coords = [lay.coords(r) for r in g]
        assert [c[axis] for c in coords] == list(range(size))  # group order = the coordinate
        for other in range(3):
            if other != axis:
                assert len({c[other] for c in coords}) == 1


def test_check_refuses_what_the_model_cannot_take():
    with pytest.raises(ValueError, match=r"dp\*tp\*pp = 2\*2\*2 = 8 must equal workers=4"):
        Layout(dp=2, tp=2, pp=2).check(4, **SHAPE)
    with pytest.raises(ValueError, match=r"tp=4 must divide the 2 attention heads.*valid tp: 1, 2"):
        Layout(tp=4).check(4, **SHAPE)
    with pytest.raises(ValueError, match=r"pp=3 is larger than the model's 2 layers; valid pp: 1..2"):
        Layout(pp=3).check(3, **SHAPE)
    with pytest.raises(ValueError, match=r"micro_batches=8 is more than batch_size=4"):
        Layout(pp=2, micro_batches=8).check(2, batch_size=4, **SHAPE)
    with pytest.raises(ValueError, match=r"sequence_parallel cuts the 15 positions over tp=2 ranks; valid tp: 1"):
        Layout(tp=2, sequence_parallel=True).check(2, seq=15, **SHAPE)
    assert Layout(dp=2, tp=2, pp=2).check(8, **SHAPE).world == 8
