"""commlab.sim.grace_costs: GRACE's TensorFlow compressors counted from its code. Oracles: the
device's closed form for a one-operation encode, the structure of GRACE's communicators (an
all-gather decodes every rank's payload and adds them, an all-reduce decodes once), its memories
(the residual decompresses its own payload again), its host round trips (tf.where, DGC's loop,
TensorFlow's QR on the host),
and DGC's threshold search worked by hand."""
import math

import pytest

from commlab import compress
from commlab.sim import DEVICES, grace, iteration
from commlab.sim.grace_costs import MAX_ROUNDS, GraceCosts, dgc_rounds

V100 = DEVICES["v100"]
COSTS = GraceCosts(V100)


def work(spec, shape=(4096,), workers=8):
    return COSTS.work(compress.get(spec), shape, workers)


def test_signsgd_encode_is_one_comparison_timed_by_the_device():
    d = 1 << 20
    encode, _ = COSTS.timer()(compress.get("signsgd(coding='bytes')"), (d,), 8)
    assert math.isclose(encode, V100.launch + 1.25 * 4 * d / (V100.efficiency * V100.memory_bandwidth))


def test_an_all_gather_decodes_every_payload_and_an_all_reduce_once():
    for spec in ("topk(0.01)", "signsgd(coding='bytes')", "qsgd(levels=127, coding='bytes')", "onebit(coding='bytes')"):
        _, two = work(spec, workers=2)
        _, eight = work(spec, workers=8)
        _, nine = work(spec, workers=9)
        assert nine.launches - eight.launches == eight.launches - work(spec, workers=7)[1].launches > 0, spec
        assert eight.launches > two.launches
    for spec in ("randk(0.01)", "powersgd(rank=1, layout='tensorflow')"):
        assert work(spec, (256, 64, 3, 3), workers=2) == work(spec, (256, 64, 3, 3), workers=8), spec


def test_grace_checks_nothing_and_waits_only_where_tensorflow_must():
    for spec in ("topk(0.01)", "randk(0.01)", "signsgd(coding='bytes')", "qsgd(levels=127, coding='bytes')",
                 "terngrad(coding='bytes')", "natural", "powersgd(rank=1, layout='tensorflow')"):
        encode, decode = work(spec)
        assert encode.syncs == decode.syncs == 0, spec
    # TensorFlow 1.15 runs tf.linalg.qr on the host: each of a matrix's two QRs is a round trip
    encode, _ = work("powersgd(rank=1, layout='tensorflow')", (256, 64, 3, 3))
    assert encode.syncs == 2 and encode.host == 6 * (3 + 3 * 64 * 256) / (256 * 64 * 9)
    assert work("threshold(0.01)")[0].syncs == 1  # tf.where learns its size on the host
    assert work("onebit(coding='bytes')")[0].syncs == 2  # two boolean masks
    assert work("dgc(ratio=0.01)", (1 << 20,))[0].syncs == 2 + 1  # the loop's predicate, tf.cond, tf.where


def test_the_residual_decompresses_its_own_payload_again():
    plain, decode = work("topk(0.01)", workers=1)
    with_memory, _ = work("topk(0.01)+ef", workers=1)
    _, one = work("topk(0.01)", workers=1)
    # + residual (1 op), then the payload decoded again and tensor - decoded, assigned (2 ops)
    assert with_memory.launches == plain.launches + 1 + (one.launches - 1 - 2) + 2


def test_powersgd_works_on_tensorflows_layout():
    product = lambda shape: work("powersgd(rank=1, layout='tensorflow')", shape)[0].flops  # noqa: E731
    d = 64 * 256
    # a 1x1 kernel is one row of d in TensorFlow's layout: every product is 2 d flops
    assert product((256, 64, 1, 1)) == 3 * 2 * d
    assert product((256, 64, 3, 3)) == 3 * 2 * 9 * d  # 3 rows of 3 d
    assert work("powersgd(rank=1, layout='tensorflow')", (256,))[0].launches == 0  # a vector goes whole


def test_dgc_rounds_by_hand():
    # 2,359,296 entries: the 236th largest of 23,592 sampled sits near the 1% quantile: no round
    assert dgc_rounds(2_359_296, 0.01) == 0
    # 256 entries, k = 2 (band 1.6 to 2.5): a sample of 2, its larger |x| at the 67th percentile of |x|
    # (0.967) passes 85; times 1.25: 58, 33, 15, 4.7, then 0.81 (too few); times 0.9: 2.0. Six rounds.
    assert dgc_rounds(256, 0.01) == 6
    assert all(0 <= dgc_rounds(d, r) <= MAX_ROUNDS for d in (1, 7, 64, 10_000) for r in (0.01, 0.5, 1.0))


def test_unknown_compressors_are_refused_with_the_choices():
    with pytest.raises(ValueError, match="gtopk.*topk, threshold"):
        COSTS.entry("gtopk")
    with pytest.raises(ValueError, match="device"):
        GraceCosts().timer()
    prof = grace.v100_profile()
    with pytest.raises(ValueError, match="atomo"):
        iteration(prof, grace.testbed(10), compress="atomo", framework="horovod-mpi", compress_costs=COSTS)


def test_compare_times_graces_implementation_by_default():
    counted = grace.compare()
    declared = grace.compare(compress_costs=None)
    assert (counted.method == declared.method).all()
    none = counted.method == "none"
    assert (counted[none].predicted == declared[none].predicted).all()  # nothing to compress
    assert (counted[~none].predicted != declared[~none].predicted).any()
