"""schedule.dispatch: WFBP's recurrence (written here independently, layers 1..L as in the
MG-WFBP paper) with the ring's closed form, the baseline, priority dispatch's rules, and the
steady state of ``iteration`` against a brute-force multi-iteration event simulation."""
import random

import pytest

from commlab.arch.architectures import AllReduce
from commlab.net.link import get_link
from commlab.schedule import Plan, Profile, baseline, dispatch, iteration
from commlab.schedule.dispatch import arrivals, fifo
from commlab.schedule.policies import P3, WFBP, ByteScheduler, Fusion, MGWFBP


def _ring_closed_form(N, link):
    """t_c(n) = 2 (N-1) alpha + 2 (N-1)/N n beta (Patarasuk and Yuan)."""
    return lambda n: 2 * (N - 1) * link.alpha + 2 * (N - 1) / N * n * link.beta


def _profile(rng, L=None, positive=False):
    L = L or rng.randint(1, 16)
    lo = 1e-5 if positive else 0.0
    return Profile([rng.uniform(lo, 2e-3) for _ in range(L)], [rng.uniform(lo, 4e-3) for _ in range(L)],
                   [4 * rng.randint(1, 400_000) for _ in range(L)])


def _wfbp_recurrence(t_f, t_b, n, t_c):
    """Layers 1..L; tau_b(L) = 0, tau_b(l) = tau_b(l+1) + t_b(l+1); tau_c(L) = t_b(L),
    tau_c(l) = max(tau_c(l+1) + t_c(l+1), tau_b(l) + t_b(l)); t_iter = sum t_f + tau_c(1) + t_c(1)."""
    L = len(t_b)
    tb = {l: t_b[l - 1] for l in range(1, L + 1)}
    tc = {l: t_c(n[l - 1]) for l in range(1, L + 1)}
    tau_b, tau_c = {L: 0.0}, {L: tb[L]}
    for l in range(L - 1, 0, -1):
        tau_b[l] = tau_b[l + 1] + tb[l + 1]
        tau_c[l] = max(tau_c[l + 1] + tc[l + 1], tau_b[l] + tb[l])
    return sum(t_f) + tau_c[1] + tc[1], [tau_c[l] for l in range(1, L + 1)]


def test_ring_closed_form_is_the_library_s():
    for N in (2, 3, 8, 64):
        for link in ("10GbE", "100GbIB"):
            lk = get_link(link)
            for n in (0, 4, 1000, 10**7):
                assert AllReduce("ring").time(n, N, lk) == pytest.approx(_ring_closed_form(N, lk)(n), rel=1e-12)


def test_wfbp_equals_its_recurrence():
    rng = random.Random(0)
    for trial in range(200):
        prof = _profile(rng)
        N = rng.choice([2, 4, 16, 128])
        t_c = _ring_closed_form(N, get_link(rng.choice(["10GbE", "100GbIB", "1GbWAN"])))
        expect, tau_c = _wfbp_recurrence(prof.forward_s, prof.backward_s, prof.grad_bytes, t_c)
        t, msgs = iteration(WFBP().plan(prof), prof, t_c)
        assert t == pytest.approx(expect, rel=1e-12, abs=1e-15), trial
        # messages go L-1 .. 0 (paper's L .. 1), each starting at tau_c
        assert [m.layers for m in msgs] == [(l,) for l in reversed(range(prof.layers))]
        assert [m.start for m in msgs] == pytest.approx(list(reversed(tau_c)), rel=1e-12, abs=1e-15)
        assert all(m.end == pytest.approx(m.start + t_c(m.nbytes)) for m in msgs)


def test_baseline_is_compute_then_one_message():
    rng = random.Random(1)
    for _ in range(100):
        prof = _profile(rng)
        t_c = _ring_closed_form(rng.choice([2, 8]), get_link("10GbE"))
        t, msgs = iteration(baseline(prof), prof, t_c)
        expect = sum(prof.forward_s) + sum(prof.backward_s) + t_c(prof.total_bytes)
        assert t == pytest.approx(expect, rel=1e-12)
        assert len(msgs) == 1 and msgs[0].nbytes == prof.total_bytes
        assert msgs[0].start == pytest.approx(sum(prof.backward_s))


def test_fifo():
    assert fifo([1, 1, 5], [2, 1, 1]) == [(1, 3), (3, 4), (5, 6)]
    assert fifo([0, 0], [1, 1], start=2) == [(2, 3), (3, 4)]


def test_one_bucket_per_layer_pieces_and_bytes():
    prof = Profile([0] * 3, [1, 2, 3], [4, 8, 12])
    msgs = dispatch(Fusion(mb=1e-6 * 10, first_mb=1e-6 * 10).plan(prof), prof, lambda n: 1.0)
    # reverse order: 12 bytes >= 10 closes; then 8 + 4 = 12 >= 10 closes
    assert [(m.layers, m.nbytes, m.ready, m.start, m.end) for m in msgs] == [((2,), 12, 3, 3, 4), ((0, 1), 12, 6, 6, 7)]


# ----------------------------------------------------------------------------- priority
def _check_priority(plan, prof, t_c, msgs):
    """The dispatch rules, checked message by message against the plan's pieces."""
    pieces, ready = plan.pieces, prof.ready()
    piece_ready = [ready[p.layer] for p in pieces]
    sent, free = set(), 0.0
    for m in msgs:
        assert len(m.pieces) >= 1
        assert m.nbytes == sum(pieces[i].nbytes for i in m.pieces)
        assert m.nbytes <= plan.credit or len(m.pieces) == 1
        if plan.credit == 0:
            assert len(m.pieces) == 1
        unsent = [i for i in range(len(pieces)) if i not in sent]
        # work conserving: the stream waits only when nothing is ready
        assert m.start == pytest.approx(max(free, min(piece_ready[i] for i in unsent)), abs=1e-15)
        avail = sorted((i for i in unsent if piece_ready[i] <= m.start), key=lambda i: (pieces[i].layer,
                                                                                         pieces[i].start))
        # the most urgent (lowest layer) ready pieces, as many as the credit takes
        assert list(m.pieces) == avail[:len(m.pieces)]
        if len(avail) > len(m.pieces):
            assert m.nbytes + pieces[avail[len(m.pieces)]].nbytes > plan.credit
        assert m.end == pytest.approx(m.start + t_c(m.nbytes))
        assert m.ready == max(piece_ready[i] for i in m.pieces)
        sent.update(m.pieces)
        free = m.end
    assert len(sent) == len(pieces)


def test_priority_dispatch_rules():
    rng = random.Random(2)
    for trial in range(60):
        prof = _profile(rng, L=rng.randint(1, 8))
        t_c = _ring_closed_form(rng.choice([2, 8]), get_link(rng.choice(["10GbE", "100GbIB"])))
        for plan in (ByteScheduler(0.05, 0.2).plan(prof), ByteScheduler(0.3, 0.3).plan(prof),
                     P3(slice_kb=100).plan(prof)):
            _check_priority(plan, prof, t_c, dispatch(plan, prof, t_c))


def test_priority_lower_layer_overtakes():
    # layer 1 (ready at 1) sends 2 pieces; layer 0 becomes ready at 2 while the first is on the
    # wire: it goes before layer 1's second piece
    prof = Profile([0, 0], [1, 1], [8, 8])
    plan = P3(slice_kb=0.004).plan(prof)  # 4-byte pieces: 2 per layer
    msgs = dispatch(plan, prof, lambda n: 1.5)
    assert [(plan.pieces[m.pieces[0]].layer, m.start) for m in msgs] == [(1, 1.0), (0, 2.5), (0, 4.0), (1, 5.5)]


# ----------------------------------------------------------------------------- steady state
def _brute_force(plan, prof, t_c, iterations):
    """Event simulation of ``iterations`` whole iterations on one compute and one comm stream.

    Compute: forward layers 0..L-1 (layer l of iteration k waits for layer l's parameters of
    iteration k-1 if the plan's forward waits, else for all of them), then backward L-1..0.
    Comm: one message at a time; buckets in order when their pieces are ready, or (priority)
    the ready pieces of the lowest layers up to the credit. Returns backward start times."""
    L, P = prof.layers, len(plan.pieces)
    ops = [op for k in range(iterations) for op in
           [("f", k, l) for l in range(L)] + [("b", k, l) for l in reversed(range(L))]]
    ready, arrived, done_pieces = {}, {}, {}  # (k, piece) -> time; (k, layer) -> time
    comp = comm = None  # (end, what)
    next_op, next_bucket, unsent, starts, t = 0, [0] * iterations, set(), [], 0.0
    left = {(k, l): sum(1 for p in plan.pieces if p.layer == l) for k in range(iterations) for l in range(L)}
    while next_op < len(ops) or comp or comm or unsent:
        if comp and comp[0] <= t:
            _, (kind, k, l) = comp
            comp = None
            if kind == "b":
                for i, p in enumerate(plan.pieces):
                    if p.layer == l:
                        ready[(k, i)] = t
                        unsent.add((k, i))
        if comm and comm[0] <= t:
            for k, i in comm[1]:
                l = plan.pieces[i].layer
                left[(k, l)] -= 1
                if left[(k, l)] == 0:
                    arrived[(k, l)] = t
            comm = None
        if comp is None and next_op < len(ops):
            kind, k, l = ops[next_op]
            ok = kind == "b" or k == 0 or (
                (k - 1, l) in arrived if plan.forward_waits else all((k - 1, j) in arrived for j in range(L)))
            if ok:
                if kind == "b" and l == L - 1:
                    starts.append(t)
                comp = (t + (prof.forward_s[l] if kind == "f" else prof.backward_s[l]), (kind, k, l))
                next_op += 1
                continue  # a zero-second op: handle its end at this same t
        if comm is None and unsent:
            k = min(k for k, _ in unsent)
            chosen = []
            if plan.buckets is not None:
                b = plan.buckets[next_bucket[k]]
                if all((k, i) in unsent for i in b):
                    chosen = [(k, i) for i in b]
                    next_bucket[k] += 1
            else:
                avail = sorted((i for kk, i in unsent if kk == k),
                               key=lambda i: (plan.pieces[i].layer, plan.pieces[i].start))
                size = 0
                for i in avail:
                    if chosen and size + plan.pieces[i].nbytes > plan.credit:
                        break
                    chosen.append((k, i))
                    size += plan.pieces[i].nbytes
            if chosen:
                unsent.difference_update(chosen)
                comm = (t + t_c(sum(plan.pieces[i].nbytes for _, i in chosen)), chosen)
                continue
        pending = [x[0] for x in (comp, comm) if x is not None]
        if not pending:  # nothing left to run
            assert next_op == len(ops) and not unsent
            break
        t = min(pending)
    return starts


PLANS = [
    lambda prof, t_c: WFBP().plan(prof),
    lambda prof, t_c: baseline(prof),
    lambda prof, t_c: MGWFBP().plan(prof, t_c),
    lambda prof, t_c: Fusion(0.3, 0.1).plan(prof),
    lambda prof, t_c: ByteScheduler(0.1, 0.3).plan(prof),
    lambda prof, t_c: P3(slice_kb=300).plan(prof),
    lambda prof, t_c: Plan("fifo+waits", WFBP().plan(prof).pieces, WFBP().plan(prof).buckets, forward_waits=True),
]


@pytest.mark.parametrize("make", PLANS, ids=["wfbp", "none", "mg_wfbp", "fusion", "bytescheduler", "p3",
                                             "buckets_waiting"])
def test_iteration_is_the_steady_state_of_many_iterations(make):
    rng = random.Random(5)
    for trial in range(25):
        prof = _profile(rng, L=rng.randint(1, 7), positive=True)
        t_c = _ring_closed_form(rng.choice([2, 8, 32]), get_link(rng.choice(["10GbE", "100GbIB"])))
        plan = make(prof, t_c)
        starts = _brute_force(plan, prof, t_c, iterations=5)
        periods = [b - a for a, b in zip(starts, starts[1:])]
        t, msgs = iteration(plan, prof, t_c)
        assert periods == pytest.approx([t] * len(periods), rel=1e-9), trial
        # and the first backward starts after the first forward
        assert starts[0] == pytest.approx(sum(prof.forward_s))


def test_forward_waits_overlaps_the_next_forward():
    # t_f = t_b = (1, 0.5) per layer, layer 1's 800 bytes in 4-byte slices at 100 bytes/s:
    # slices of layer 1 go from 0.5; layer 0 (4 bytes) is ready at 1.0 and overtakes after the
    # slice on the wire (ends 1.02): [1.02, 1.06]; layer 1's last 187 slices end at 8.54
    prof = Profile([1, 1], [0.5, 0.5], [4, 800])
    plan = P3(slice_kb=0.004).plan(prof)
    t, msgs = iteration(plan, prof, lambda n: n / 100)
    assert arrivals(msgs, 2) == pytest.approx([1.06, 8.54])
    # the next forward runs layer 0 at 1.06 (done 2.06), waits for layer 1 until 8.54: 9.54
    assert t == pytest.approx(9.54)
    # without waiting per layer it starts after the last arrival: 8.54 + 2
    whole = Plan("p3-whole", plan.pieces, credit=0, forward_waits=False)
    assert iteration(whole, prof, lambda n: n / 100)[0] == pytest.approx(10.54)
