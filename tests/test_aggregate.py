"""Aggregation helpers: every rank gets the average of the compressed tensors ("sum" through
any all-reduce algorithm, "gather" by a variable-size all-gather of payload bytes), the sign
vote for "majority", and compressors with their own protocol; on threads and on Gloo."""
import pytest
import torch

from commlab.compress import get
from commlab.arch.aggregate import aggregate, aggregate_all, gather_payloads
from commlab.compress.base import Compressor, Payload
from commlab.runtime import RankError, launch


class Signs(Compressor):
    """Test compressor for the "majority" path: one bool per coordinate."""
    name, aggregation = "signs", "majority"

    def compress(self, t, key=None):
        return Payload({"s": t >= 0}, t.shape, t.dtype)

    def decompress(self, p):
        return (p["s"].to(p.dtype) * 2 - 1).reshape(p.shape)


def _x(rank, shape=(300,)):
    return torch.randn(shape, generator=torch.Generator().manual_seed(rank), dtype=torch.float64)


CASES = [  # (name, compressor factory, all-reduce algorithm)
    ("none", lambda: None, "ring"),
    ("topk", lambda: get("topk(0.1)"), "native"),
    ("threshold", lambda: get("threshold(1.0)"), "native"),
    ("randk-native", lambda: get("randk(0.1, seed=5)"), "native"),
    ("randk-ring", lambda: get("randk(0.1, seed=5)"), "ring"),
    ("randk-tree", lambda: get("randk(0.1, seed=5)"), "tree"),
    ("randk-hd", lambda: get("randk(0.1, seed=5)"), "halving_doubling"),
    ("majority", Signs, "native"),
    ("atomo", lambda: get("atomo(rank=2)"), "native"),
    ("powersgd", lambda: get("powersgd(rank=2)"), "ring"),
    ("gtopk", lambda: get("gtopk(0.1)"), "native"),
]


def _all_cases(comm):
    out = {}
    for name, factory, algorithm in CASES:
        shape = (20, 15) if name in ("atomo", "powersgd") else (300,)
        out[name] = aggregate(comm, factory(), _x(comm.rank, shape), "w", algorithm)
    return out


def _expected(name, n):
    factory = dict((c[0], c[1]) for c in CASES)[name]
    shape = (20, 15) if name in ("atomo", "powersgd") else (300,)
    xs = [_x(r, shape) for r in range(n)]
    if name == "none":
        return sum(xs) / n
    if name == "majority":
        return torch.sign(sum(torch.sign(Signs()(x)) for x in xs))
    if name.startswith("randk"):  # shared positions: the mean of C(x_i) is C(mean x)
        return factory()(sum(xs) / n)
    if name == "powersgd":
        return None  # checked against its single-process reference in test_powersgd
    if name == "gtopk":
        return None  # checked against its numpy replay in test_gtopk
    # gather: mean of the decompressed payloads (a fresh compressor per rank, as in the run,
    # so ATOMO's draws are the same ones)
    return sum(factory()(x) for x in xs) / n


def _check(results, n):
    for name, _, _ in CASES:
        for r in range(n):
            assert torch.allclose(results[r][name], results[0][name], atol=1e-12), name
        want = _expected(name, n)
        if want is not None:
            assert torch.allclose(results[0][name], want, atol=1e-6), name  # combine averages in fp32


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_aggregate_on_threads(n):
    _check(launch(_all_cases, n), n)


def test_aggregate_on_gloo():
    _check(launch(_all_cases, 3, runtime="gloo", timeout=60), 3)


def _gather(comm):
    k = 3 * comm.rank + 1  # a different payload size on every rank
    p = Payload({"idx": torch.arange(k, dtype=torch.int32), "v": torch.full((k,), float(comm.rank))},
                (k,), torch.float32)
    return [(q["v"].tolist(), q.shape) for q in gather_payloads(comm, p)]


def test_gather_payloads_of_different_sizes():
    for out in launch(_gather, 4):
        assert out == [([float(r)] * (3 * r + 1), (3 * r + 1,)) for r in range(4)]


def _many(comm):
    ts = [_x(comm.rank, (50,)), _x(comm.rank + 10, (4, 5))]
    return aggregate_all(comm, get("topk(0.2)"), ts, ["a", "b"])


def test_aggregate_all_goes_tensor_by_tensor():
    out = launch(_many, 2)
    c = get("topk(0.2)")
    assert torch.allclose(out[0][0], (c(_x(0, (50,))) + c(_x(1, (50,)))) / 2)
    assert torch.allclose(out[1][1], (c(_x(10, (4, 5))) + c(_x(11, (4, 5)))) / 2)
    with pytest.raises(TypeError, match="Compressor or None"):
        aggregate(None, "topk", torch.zeros(3))


def _powersgd_all(comm):
    ts = [_x(comm.rank, (20, 15)), _x(comm.rank + 10, (5,))]
    return aggregate_all(comm, get("powersgd(rank=2)"), ts, ["w", "b"], algorithm="ring"), comm.stats.msgs_sent


def test_aggregate_all_uses_powersgd_s_two_round_protocol():
    out = launch(_powersgd_all, 2)
    for r in range(2):
        assert torch.allclose(out[r][0][1], (_x(10, (5,)) + _x(11, (5,))) / 2)  # the bias, uncompressed
    # two ring all-reduces of 2 ranks: 2 messages each, whatever the number of tensors
    assert out[0][1] == 4


def test_own_protocol_with_ef_is_refused():
    for spec in ("gtopk(0.1)+ef", "powersgd(rank=2)+ef"):
        with pytest.raises(ValueError, match=r"built in .* without '\+ef'"):
            get(spec)


class _Counting(Compressor):
    """Counts its decodes (one counter for every instance in this process)."""
    name, aggregation, decodes = "counting", "gather", [0]

    def compress(self, t, key=None):
        return Payload({"v": t.clone()}, t.shape, t.dtype)

    def decompress(self, p):
        self.decodes[0] += 1
        return p["v"].reshape(p.shape).clone()


def _counted(comm):
    return aggregate(comm, _Counting(), _x(comm.rank), "w")


def test_ranks_that_share_memory_decode_each_payload_once():
    _Counting.decodes[0] = 0
    out = launch(_counted, 4)
    assert _Counting.decodes[0] == 4  # not 4 x 4: the threads runtime shares the gathered payloads
    want = sum(_x(r) for r in range(4)) / 4
    assert all(torch.allclose(o, want) for o in out)
    assert all(o.data_ptr() != out[0].data_ptr() for o in out[1:])  # each rank's result is its own


class MaxNorm(Compressor):
    """Test compressor with a protocol of its own: every rank scales by the largest norm (agreed by an
    all-reduce max), which no plain aggregation does."""
    name, aggregation, protocol = "max_norm", "sum", "test_max_norm"


def _max_norm_protocol(comm, compressor, tensors, keys, algorithm, kw):
    out = []
    for t in tensors:
        norm = comm.all_reduce(t.norm().reshape(1), "max")
        out.append(comm.all_reduce(t / norm, "sum") / comm.world_size)
    return out


def _max_norm_rank(comm):
    return aggregate(comm, MaxNorm(), _x(comm.rank))


def test_a_protocol_registered_in_one_line_is_what_the_compressor_aggregates_by():
    from commlab.arch import aggregate as agg

    with pytest.raises(RankError, match="'test_max_norm', which no one registered; valid: powersgd, gtopk"):
        launch(_max_norm_rank, 3)
    agg.register_protocol("test_max_norm", _max_norm_protocol)
    try:
        out = launch(_max_norm_rank, 3)
        xs = [_x(r) for r in range(3)]
        want = sum(xs) / max(float(x.norm()) for x in xs) / 3
        for got in out:
            torch.testing.assert_close(got, want)
        with pytest.raises(ValueError, match="must be a new, non-empty string"):
            agg.register_protocol("test_max_norm", _max_norm_protocol)
    finally:
        del agg.PROTOCOLS["test_max_norm"]
