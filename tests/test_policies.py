"""schedule.policies: DDP's buckets (against torch's own bucket assignment), MG-WFBP's merge
rule re-derived by hand, pieces covering every gradient byte once, partitions on element
boundaries, iteration times (MG-WFBP never slower than WFBP or the baseline, the exact
bucketing search never slower than any bucketing), and the errors bad arguments give."""
import itertools
import random

import pytest
import torch
import torch.distributed as dist

from commlab import schedule
from commlab.arch.architectures import AllReduce
from commlab.net.link import get_link
from commlab.schedule import MB, Plan, Profile, baseline, iteration
from commlab.schedule.policies import MGWFBP, P3, WFBP, ByteScheduler, Fusion, partitions
from commlab.schedule.search import best_buckets

SPECS = ["wfbp", "fusion", "fusion(mb=0.002, first_mb=0.001)", "mg_wfbp", "bytescheduler",
         "bytescheduler(partition_mb=0.0007, credit_mb=0.0021)", "p3", "p3(slice_kb=5)", "search",
         "search(partitions_mb=(0.001,), credits_mb=(0.002, 0.004))"]


def _random_profile(rng, layers=None, itemsize=4):
    L = layers or rng.randint(1, 14)
    return Profile([rng.uniform(0, 2e-3) for _ in range(L)], [rng.uniform(0, 4e-3) for _ in range(L)],
                   [itemsize * rng.choice([1, 3, rng.randint(1, 3000), rng.randint(1, 300_000)]) for _ in range(L)],
                   itemsize=itemsize)


def _ring(workers=8, link="10GbE"):
    return lambda n: AllReduce("ring").time(n, workers, get_link(link))


def _check_plan(plan, prof):
    """Pieces tile every layer's gradient exactly once; buckets (if any) hold every piece once."""
    for l in range(prof.layers):
        mine = sorted((p.start, p.stop) for p in plan.pieces if p.layer == l)
        at = 0
        for a, b in mine:
            assert a == at and b > a, (l, mine)
            at = b
        assert at == prof.grad_bytes[l] or (prof.grad_bytes[l] == 0 and not mine)
    assert all(0 <= p.layer < prof.layers for p in plan.pieces)
    if plan.buckets is not None:
        flat = [i for b in plan.buckets for i in b]
        assert sorted(flat) == list(range(len(plan.pieces)))
        assert all(len(b) > 0 for b in plan.buckets)


# ----------------------------------------------------------------------------- coverage
@pytest.mark.parametrize("spec", SPECS)
def test_every_policy_covers_every_byte_once(spec):
    rng = random.Random(hash(spec) % 1000)
    policy = schedule.get(spec)
    for _ in range(20):
        prof = _random_profile(rng)
        plan = policy.plan(prof, _ring())
        _check_plan(plan, prof)
        assert sum(p.nbytes for p in plan.pieces) == prof.total_bytes
        # the dispatcher sends each piece exactly once too
        msgs = schedule.dispatch(plan, prof, _ring())
        assert sorted(i for m in msgs for i in m.pieces) == list(range(len(plan.pieces)))


def test_whole_layer_policies_never_split_a_layer():
    rng = random.Random(1)
    for _ in range(30):
        prof = _random_profile(rng)
        for policy in (WFBP(), Fusion(0.01, 0.001), Fusion(), MGWFBP()):
            plan = policy.plan(prof, _ring())
            assert [(p.layer, p.start, p.stop) for p in plan.pieces] == \
                [(l, 0, b) for l, b in enumerate(prof.grad_bytes)]
            # buckets are runs of consecutive layers in backward order, covering L-1 .. 0
            order = [plan.pieces[i].layer for b in plan.buckets for i in b]
            assert order == list(reversed(range(prof.layers)))


def test_baseline_and_wfbp():
    prof = Profile([1, 1, 1], [1, 1, 1], [4, 8, 12])
    assert baseline(prof).buckets == ((2, 1, 0),)
    assert WFBP().plan(prof).buckets == ((2,), (1,), (0,))


# ----------------------------------------------------------------------------- fusion = DDP
def _ddp_buckets(sizes_backward, first, rest):
    """torch DDP's own assignment (the C++ reducer's), tensors given in backward order."""
    tensors = [torch.empty(n // 4) for n in sizes_backward]
    buckets, _ = dist._compute_bucket_assignment_by_size(tensors, [first, rest])
    return [list(b) for b in buckets]


@pytest.mark.skipif(not hasattr(dist, "_compute_bucket_assignment_by_size"), reason="torch without DDP internals")
def test_fusion_equals_torch_ddp_bucket_assignment():
    rng = random.Random(0)
    for trial in range(60):
        L = rng.randint(1, 25)
        sizes = [4 * rng.choice([1, rng.randint(1, 5000), rng.randint(1, 400_000)]) for _ in range(L)]
        prof = Profile([0] * L, [1e-3] * L, sizes)
        mb, first = rng.choice([(0.5, 0.1), (1, 1), (2, 0.3), (25, 1)])
        plan = Fusion(mb=mb, first_mb=first).plan(prof)
        ours = [[plan.pieces[i].layer for i in b] for b in plan.buckets]
        backward = list(reversed(range(L)))  # DDP sees parameters in reverse registration order
        theirs = [[backward[i] for i in b] for b in _ddp_buckets([sizes[l] for l in backward],
                                                                    int(first * MB), int(mb * MB))]
        assert ours == theirs, (trial, sizes, mb, first)


def test_fusion_rule_by_hand():
    # layers 0..5 with bytes (in MB) 0.4, 0.4, 3, 0.2, 0.7, 0.5; first bucket >= 1 MB, then >= 2 MB
    mb = [0.4, 0.4, 3, 0.2, 0.7, 0.5]
    prof = Profile([0] * 6, [0] * 6, [int(m * MB) for m in mb])
    plan = Fusion(mb=2, first_mb=1).plan(prof)
    # reverse: 5 (0.5), 4 (1.2 >= 1: closes); 3 (0.2), 2 (3.2 >= 2: closes); 1, 0 (0.8: the rest)
    assert plan.buckets == ((5, 4), (3, 2), (1, 0))
    assert plan.credit is None and not plan.forward_waits
    # one huge threshold: one bucket (Horovod's 64 MB on a small model)
    assert Fusion(64, 64).plan(prof).buckets == ((5, 4, 3, 2, 1, 0),)
    # a threshold below every layer: one bucket per layer (WFBP)
    assert Fusion(1e-6, 1e-6).plan(prof).buckets == WFBP().plan(prof).buckets


# ----------------------------------------------------------------------------- partitions
def test_partitions_on_element_boundaries():
    prof = Profile([0] * 3, [0] * 3, [40, 4, 1000], itemsize=4)
    # 10.5 bytes round down to 8 (two float32s); each layer cut from its start
    pieces = partitions(prof, 10)
    assert [(p.layer, p.start, p.stop) for p in pieces if p.layer < 2] == \
        [(0, 0, 8), (0, 8, 16), (0, 16, 24), (0, 24, 32), (0, 32, 40), (1, 0, 4)]
    assert all(p.start % 4 == 0 and p.stop % 4 == 0 for p in pieces)
    assert max(p.nbytes for p in pieces) == 8
    # smaller than one element: one element per piece
    assert all(p.nbytes == 4 for p in partitions(prof, 1))
    # float64 gradients: multiples of 8
    p8 = Profile([0], [0], [8 * 13], itemsize=8)
    assert [(p.start, p.stop) for p in partitions(p8, 20)] == [(s, min(s + 16, 104)) for s in range(0, 104, 16)]


def test_bytescheduler_and_p3_plans():
    rng = random.Random(3)
    for _ in range(20):
        prof = _random_profile(rng)
        part_mb, credit_mb = rng.choice([(0.01, 0.03), (0.0001, 0.0001), (1, 4)])
        plan = ByteScheduler(part_mb, credit_mb).plan(prof)
        size = int(part_mb * MB) // 4 * 4
        assert plan.buckets is None and plan.credit == int(credit_mb * MB) and plan.forward_waits
        for l in range(prof.layers):  # every piece but a layer's last has exactly the partition size
            mine = [p for p in plan.pieces if p.layer == l]
            assert all(p.nbytes == size for p in mine[:-1]) and 0 < mine[-1].nbytes <= size
        p3 = P3(slice_kb=0.3).plan(prof)
        assert p3.credit == 0 and p3.forward_waits and p3.buckets is None
        assert max(p.nbytes for p in p3.pieces) <= 300 and all(p.stop % 4 == 0 for p in p3.pieces)
    with pytest.raises(ValueError, match="either buckets"):
        Plan("x", (), buckets=((0,),), credit=3)
    with pytest.raises(ValueError, match="either buckets"):
        Plan("x", ())


# ----------------------------------------------------------------------------- MG-WFBP
def _lin(a, b):
    return lambda n: a + b * n


def test_mg_wfbp_merge_rule_by_hand():
    # t_b = 1, 1, 0.1, 0.1, 1 (layers 0..4): ready(4) = 1, ready(3) = 1.1, ready(2) = 1.2,
    # ready(1) = 2.2, ready(0) = 3.2. Every layer 400 bytes; t_c(n) = 0.5 + n / 1000, a = 0.5.
    # merge l into l-1 iff its message would start after ready(l-1) - a:
    #   [4] starts 1.0 > ready(3) - a = 0.6: merge; [4,3] starts 1.1 > ready(2) - a = 0.7: merge;
    #   [4,3,2] starts 1.2 <= ready(1) - a = 1.7: keep (ends 1.2 + 0.5 + 1.2 = 2.9);
    #   [1] starts max(2.9, 2.2) = 2.9 > ready(0) - a = 2.7: merge.
    prof = Profile([0] * 5, [1, 1, 0.1, 0.1, 1], [400] * 5)
    plan = MGWFBP().plan(prof, _lin(0.5, 1e-3))
    assert plan.buckets == ((4, 3, 2), (1, 0))
    t_mg, msgs = iteration(plan, prof, _lin(0.5, 1e-3))
    assert [x for m in msgs for x in (m.start, m.end)] == pytest.approx([1.2, 2.9, 3.2, 3.2 + 0.5 + 0.8])
    t_wfbp = iteration(WFBP().plan(prof), prof, _lin(0.5, 1e-3))[0]
    assert t_mg < t_wfbp


def test_mg_wfbp_tiny_layers_merge_large_ones_do_not():
    prof = Profile([0] * 4, [1] * 4, [4] * 4)
    # start-up a = 1.5 larger than a layer's backward: every tiny message waits for the next layer
    assert MGWFBP().plan(prof, _lin(1.5, 1e-6)).buckets == ((3, 2, 1, 0),)
    # a = 0.1: each message starts as soon as its layer is ready, well before the next one is
    assert MGWFBP().plan(prof, _lin(0.1, 1e-6)).buckets == ((3,), (2,), (1,), (0,))
    # large layers whose communication (2 s each) outlasts the next backward: WFBP queues them,
    # message l starts at 1 + 2 (3 - l) - a or later. Layer 3 starts at 1 <= ready(2) - a = 1.9:
    # kept; layer 2 starts at 3 > ready(1) - a = 2.9: merged; [2, 1] starts 3 <= 3.9: kept.
    big = Profile([0] * 4, [1] * 4, [1900] * 4)
    assert MGWFBP().plan(big, _lin(0.1, 1e-3)).buckets == ((3,), (2, 1), (0,))


def test_mg_wfbp_never_slower_than_wfbp_or_baseline():
    rng = random.Random(7)
    for seed in range(300):
        prof = _random_profile(rng)
        workers = rng.choice([2, 4, 16, 64])
        comm = _ring(workers, rng.choice(["100GbE", "10GbE", "100GbIB"]))
        t_mg = iteration(MGWFBP().plan(prof, comm), prof, comm)[0]
        t_wfbp = iteration(WFBP().plan(prof), prof, comm)[0]
        t_base = iteration(baseline(prof), prof, comm)[0]
        assert t_mg <= t_wfbp * (1 + 1e-12) + 1e-15, seed
        assert t_mg <= t_base * (1 + 1e-12) + 1e-15, seed


def test_mg_wfbp_needs_comm_time():
    with pytest.raises(ValueError, match="comm_time"):
        MGWFBP().plan(Profile([0], [0], [4]), None)


# ----------------------------------------------------------------------------- search
def _bucketings(L):
    """Every way to cut the backward order L-1..0 into runs."""
    order = list(reversed(range(L)))
    for cuts in itertools.product([False, True], repeat=L - 1):
        groups, cur = [], [order[0]]
        for c, l in zip(cuts, order[1:]):
            if c:
                groups.append(cur)
                cur = []
            cur.append(l)
        yield groups + [cur]


def test_search_buckets_are_the_best_of_every_bucketing():
    rng = random.Random(11)
    for _ in range(40):
        prof = _random_profile(rng, layers=rng.randint(1, 8))
        comm = _ring(rng.choice([2, 8, 32]), rng.choice(["100GbE", "10GbE"]))
        t = lambda groups: iteration(Plan("b", tuple(WFBP().plan(prof).pieces), tuple(map(tuple, groups))),
                                     prof, comm)[0]
        best = min(t(g) for g in _bucketings(prof.layers))
        assert t(best_buckets(prof, comm)) == pytest.approx(best, rel=1e-12)
        assert t(best_buckets(prof, comm)) <= iteration(MGWFBP().plan(prof, comm), prof, comm)[0] * (1 + 1e-12)
        # the search's pick is the least of its candidates, so never slower than its exact buckets
        assert iteration(schedule.get("search").plan(prof, comm), prof, comm)[0] <= t(best_buckets(prof, comm))


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("spec, err, words", [
    ("fusion(mb=0)", ValueError, ["mb=0", "> 0"]),
    ("fusion(mb=-1)", ValueError, ["mb=-1", "> 0"]),
    ("fusion(first_mb=0)", ValueError, ["first_mb=0", "> 0"]),
    ("fusion(mb=True)", ValueError, ["mb=True"]),
    ("fusion(mb='big')", ValueError, ["mb='big'"]),
    ("bytescheduler(partition_mb=0)", ValueError, ["partition_mb=0"]),
    ("bytescheduler(partition_mb=4, credit_mb=1)", ValueError, ["credit_mb=1", "partition_mb=4", "credit_mb >= "]),
    ("p3(slice_kb=0)", ValueError, ["slice_kb=0"]),
    ("wfbpp", ValueError, ["'wfbpp'", "wfbp", "fusion", "mg_wfbp", "bytescheduler", "p3"]),
    ("fusion(bucket=3)", ValueError, ["bucket", "mb=25", "first_mb=1"]),
    ("mg_wfbp(2)", ValueError, ["mg_wfbp(2)"]),
    (3, TypeError, ["3", "'wfbp'"]),
    (["wfbp"], TypeError, ["['wfbp']"]),
])
def test_bad_schedules_name_the_value_and_the_choices(spec, err, words):
    with pytest.raises(err) as info:
        schedule.get(spec)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_get_none_and_instances():
    assert schedule.get(None) is None and schedule.get("none") is None
    p = Fusion(mb=3)
    assert schedule.get(p) is p
    assert isinstance(schedule.get("FUSION(mb=3)"), Fusion) and schedule.get("mg-wfbp").name == "mg_wfbp"
    assert repr(Fusion(mb=3)) == "fusion(mb=3.0, first_mb=1.0)"


def test_cycle_groups_what_is_ready_at_each_tick():
    """Horovod's loop: every 5 ms the ready layers go, at most mb per message; a busy link delays the next tick."""
    from commlab.schedule import Profile, get

    prof = Profile([1e-3] * 6, [2e-3] * 6, [4_000_000] * 6)  # backward makes layer 5 ready at 2 ms, 4 at 4 ms, ...
    plan = get("cycle(ms=5, mb=64)").plan(prof)
    assert plan.name == "cycle" and [list(b) for b in plan.buckets] == [[5, 4], [3, 2, 1], [0]]  # ticks 5, 10, 15 ms
    assert [list(b) for b in get("cycle(ms=5, mb=5)").plan(prof).buckets] == [[5], [4], [3], [2], [1], [0]]
    busy = get("cycle(ms=5, mb=64)").plan(prof, lambda n: 20e-3)  # the first message holds the link to 25 ms
    assert [list(b) for b in busy.buckets] == [[5, 4], [3, 2, 1, 0]]
    with pytest.raises(ValueError, match="ms=0"):
        get("cycle(ms=0)")
