"""Parameter server: BSP through servers equals BSP through an all-reduce; its simulated time
equals the closed forms of commlab.net.cost; its bytes are what the layout says; it shuts
down cleanly and a crashed worker fails the launch instead of hanging."""
import time

import pytest
import torch

from commlab.arch.architectures import AllReduce, ExchangeSetup, ParameterServer
from commlab.arch.exchange import AllReduceExchange
from commlab.arch.ps import ServerPlacement, PSClient, ShardServer, run_server, trainable
from commlab.arch import naive, ring
from commlab.arch.ps_layout import ps_colocated, ps_sharded, ps_single
from commlab.arch.ps_policy import Policy, get_policy
from commlab.flat import flatten
from commlab.net import LinkModel, Network, cost
from commlab.runtime import RankError, launch
from commlab.sync.server_policies import ASPPolicy, SSPPolicy

SGD = {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-3}
STEPS = 4


def _build():
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))


torch.manual_seed(0)
_STATE = _build().state_dict()  # ranks are threads sharing torch's RNG: one start for all


def _model():
    m = _build()
    m.load_state_dict(_STATE)
    return m


def _backward(model, rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    x, y = torch.randn(8, 6, generator=g), torch.randint(0, 3, (8,), generator=g)
    model.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()


def _train_allreduce(comm):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), **SGD)
    for step in range(STEPS):
        _backward(model, comm.rank, step)
        AllReduceExchange(comm, AllReduce("native")).step(model, opt)
    return flatten(p.detach() for p in trainable(model))


def _train_ps(comm, workers, shards, colocated):
    """What the Trainer does with arch="ps(...)": servers serve, workers push and pull."""
    model = _model()
    opt = torch.optim.SGD(model.parameters(), **SGD)
    ps, setup = ParameterServer(shards, colocated), ExchangeSetup(workers, policy="bsp")
    if ps.serves(comm.rank, workers):
        return ps.serve(comm, model, opt, setup)
    exchange = ps.exchange(comm, model, opt, setup)
    for step in range(STEPS):
        _backward(model, comm.rank, step)
        exchange.step(model, opt)
    exchange.close()
    return flatten(p.detach() for p in trainable(model))


_REFERENCE = {}


def _reference(workers):
    if workers not in _REFERENCE:
        out = launch(_train_allreduce, workers)
        assert all(torch.equal(o, out[0]) for o in out)
        _REFERENCE[workers] = out[0]
    return _REFERENCE[workers]


LAYOUTS = [(1, 1, False), (3, 1, False), (4, 2, False), (3, 5, False), (4, 1, True), (4, 2, True), (3, 3, True)]


@pytest.mark.parametrize("workers,shards,colocated", LAYOUTS)
def test_ps_bsp_equals_allreduce_bsp(workers, shards, colocated):
    ps = ParameterServer(shards, colocated)
    out = launch(_train_ps, ps.world_size(workers), args=(workers, shards, colocated))
    want = _reference(workers)
    for params in out[:workers]:
        torch.testing.assert_close(params, want, rtol=1e-6, atol=1e-6)
    if not colocated:  # the servers hold the same pieces, and applied one update per step
        assert torch.equal(torch.cat([s["params"] for s in out[workers:]]), out[0])
        for s in out[workers:]:
            assert s["role"] == "server" and s["updates"] == STEPS and s["clocks"] == [STEPS] * workers


def test_sharded_equals_single():
    single = launch(_train_ps, 4, args=(3, 1, False))[0]
    for shards, colocated in [(2, False), (4, False), (3, True)]:
        world = ParameterServer(shards, colocated).world_size(3)
        torch.testing.assert_close(launch(_train_ps, world, args=(3, shards, colocated))[0], single,
                                   rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("workers,shards,colocated", [(3, 2, False), (4, 2, True)])
def test_ps_on_gloo_equals_allreduce(workers, shards, colocated):
    world = ParameterServer(shards, colocated).world_size(workers)
    out = launch(_train_ps, world, runtime="gloo", args=(workers, shards, colocated), timeout=60)
    for params in out[:workers]:
        torch.testing.assert_close(params, _reference(workers), rtol=1e-6, atol=1e-6)


# ----- simulated time and bytes ------------------------------------------------------------
L = LinkModel(alpha=1e-3, beta=1e-9)
NUMEL = 100_800  # divisible by 1..10, 12, 14, 15, 16: equal pieces, so the times are exact
N = 4 * NUMEL


def _push_pull(comm, workers, shards, colocated, steps):
    """``steps`` bare push/pulls; workers return (clock after each step, traffic per step)."""
    params = torch.zeros(NUMEL)
    if not colocated and comm.rank >= workers:
        return run_server(comm, params, workers, shards, lr=0.1)
    client = PSClient(comm, params, workers, shards, colocated, lr=0.1)
    times, traffic = [], []
    for _ in range(steps):
        before = comm.stats.snapshot()
        client.push(torch.full((NUMEL,), float(comm.rank + 1)))
        client.pull()
        times.append(comm.now)
        traffic.append(comm.stats.snapshot() - before)
    client.close()
    return times, traffic


def _closed_form(workers, shards, colocated):
    if colocated:
        return ps_colocated(N, workers, shards, L)
    return ps_single(N, workers, L) if shards == 1 else ps_sharded(N, workers, shards, L)


CLOCKED = ([(w, 1, False) for w in range(2, 17)] + [(w, s, False) for w in (2, 5, 8, 16) for s in (2, 3, 4, 8)]
           + [(w, s, True) for w in range(2, 17) for s in {1, 2, w // 2, w} if 1 <= s <= w])


@pytest.mark.parametrize("workers,shards,colocated", CLOCKED)
def test_simulated_time_equals_closed_form(workers, shards, colocated):
    world = ServerPlacement(workers, shards, colocated).world_size
    out = launch(_push_pull, world, net=Network(L), args=(workers, shards, colocated, 3))
    one = _closed_form(workers, shards, colocated)
    times = [max(t[k] for t, _ in out[:workers]) for k in range(3)]
    exact = NUMEL % shards == 0  # else the pieces differ by one element from n / S
    assert times[0] == pytest.approx(one, rel=1e-9 if exact else 1e-2)  # one step: the closed form
    # later steps overlap (a worker answered early pushes again while the rest still pull)
    assert all(t <= (k + 1) * one * (1 + 1e-9 if exact else 1.01) for k, t in enumerate(times))


def test_closed_forms_compare():
    for w in range(2, 17):
        assert ps_colocated(N, w, 1, L) == pytest.approx(naive.cost(N, w, L))
        assert ps_colocated(N, w, w, L) == pytest.approx(ring.cost(N, w, L))
        assert ps_sharded(N, w, w, L) < ps_single(N, w, L)
    assert ps_colocated(N, 1, 1, L) == 0.0
    with pytest.raises(ValueError, match="shards <= workers"):
        ps_colocated(N, 2, 3, L)
    assert ParameterServer(2).time(N, 4, L) == ps_sharded(N, 4, 2, L)
    assert ParameterServer(2, colocated=True).time(N, 4, L) == ps_colocated(N, 4, 2, L)


@pytest.mark.parametrize("workers,shards,numel", [(3, 1, NUMEL), (4, 2, NUMEL), (3, 4, 1001)])
def test_bytes_per_worker_and_per_server(workers, shards, numel):
    def body(comm):
        params = torch.zeros(numel)
        if comm.rank >= workers:
            return run_server(comm, params, workers, shards, lr=0.1)["stats"]
        client = PSClient(comm, params, workers, shards, lr=0.1)
        for _ in range(2):
            client.push(torch.ones(numel))
            client.pull()
        stats = comm.stats.snapshot()
        client.close()
        return stats

    out = launch(body, workers + shards)
    for s in out[:workers]:  # per step: n bytes out, n back, one message per shard each way
        assert (s.bytes_sent, s.bytes_recv, s.msgs_sent, s.msgs_recv) == (2 * 4 * numel,) * 2 + (2 * shards,) * 2
    sizes = [p.numel() for p in torch.zeros(numel).tensor_split(shards)]
    for s, size in zip(out[workers:], sizes):  # per step W pieces in, W out: 2 W D/S * 4 bytes
        assert s.bytes_sent == s.bytes_recv == 2 * workers * 4 * size
        assert s.msgs_sent == 2 * workers and s.msgs_recv == 2 * workers + workers  # + the goodbyes
    if numel % shards == 0:
        assert out[workers].bytes_sent + out[workers].bytes_recv == 2 * 2 * workers * numel // shards * 4


def test_colocated_bytes():
    workers, shards = 4, 2
    out = launch(_push_pull, workers, args=(workers, shards, True, 1))
    piece = N // shards
    for rank, (_, (t,)) in enumerate(out):
        hosts = rank < shards
        assert t.bytes_sent == (N - piece if hosts else N) + (workers - 1) * piece * hosts
        assert t.bytes_recv == t.bytes_sent


# ----- policies: the loop fits an asynchronous one ------------------------------------------------
class _TakeAnyApplyEach(Policy):
    """ASP in its plainest form: any push first, applied alone, answered at once."""


def _async(comm, workers, pushes):
    params = torch.zeros(12)
    if comm.rank >= workers:
        return run_server(comm, params, workers, 1, lr=0.5, policy=_TakeAnyApplyEach())
    client = PSClient(comm, params, workers, 1, lr=0.5, policy=_TakeAnyApplyEach())
    for _ in range(pushes[comm.rank]):
        client.push(torch.full((12,), float(comm.rank + 1)))
        x = client.pull()
    client.close()
    return x


def test_server_loop_runs_an_asynchronous_policy():
    pushes = [3, 5, 1]
    out = launch(_async, 4, args=(3, pushes))
    for server in out[3:]:
        assert server["updates"] == sum(pushes) and server["clocks"] == pushes
    final = torch.cat([s["params"] for s in out[3:]])
    want = -0.5 * sum(n * (w + 1) for w, n in enumerate(pushes))  # every gradient applied alone
    torch.testing.assert_close(final, torch.full((12,), want))


def test_arrival_order_policies_need_one_shard():
    with pytest.raises(RankError, match="single server shard; got shards=2"):
        launch(lambda comm: (PSClient if comm.rank == 0 else run_server)(comm, torch.zeros(4), 1, 2, lr=0.1,
                                                                         policy=_TakeAnyApplyEach()), 3)


def test_shard_server_answers_only_after_applying():
    layout = ServerPlacement(3, 1)
    srv = ShardServer(0, layout, torch.zeros(4), lr=1.0)
    assert srv.policy.next_worker(srv) == 0
    assert srv.take(0, torch.ones(4)) == []
    assert srv.policy.next_worker(srv) == 1
    assert srv.take(1, torch.ones(4)) == []
    assert srv.take(2, torch.ones(4) * 4) == [0, 1, 2]  # staggered: shard 0 answers 0, 1, 2
    assert torch.equal(srv.param, torch.full((4,), -2.0)) and srv.updates == 1
    srv.take(1, torch.empty(0))  # worker 1 leaves: BSP waits for the others only
    srv.take(2, torch.ones(4))
    assert srv.take(0, torch.ones(4)) == [0, 2]


# ----- shutdown, failures, errors ------------------------------------------------------------
def _crash(comm, workers, shards, policy):
    policy = {"bsp": "bsp", "ssp": SSPPolicy(2), "asp": ASPPolicy()}[policy]
    if comm.rank >= workers:
        return run_server(comm, torch.zeros(10), workers, shards, lr=0.1, policy=policy)
    client = PSClient(comm, torch.zeros(10), workers, shards, lr=0.1, policy=policy)
    for step in range(3):
        if comm.rank == 1 and step == 1:
            raise RuntimeError("worker 1 crashed")
        client.push(torch.ones(10))
        client.pull()
    client.close()


@pytest.mark.parametrize("runtime", ["threads", "gloo"])
@pytest.mark.parametrize("policy,shards", [("bsp", 2), ("ssp", 1), ("asp", 1)])
def test_crashed_worker_fails_the_launch(runtime, policy, shards):
    start = time.monotonic()
    with pytest.raises(RankError, match="worker 1 crashed") as info:
        launch(_crash, 3 + shards, runtime=runtime, args=(3, shards, policy), timeout=60)
    assert info.value.rank == 1
    assert time.monotonic() - start < 15


def test_protocol_and_argument_errors():
    def body(comm):
        client = PSClient(comm, torch.zeros(4), 1, 1, colocated=True, lr=0.1)  # one rank: all local
        with pytest.raises(RuntimeError, match="pull\\(\\) without push"):
            client.pull()
        client.push(torch.ones(4))
        with pytest.raises(RuntimeError, match="push\\(\\) twice"):
            client.push(torch.ones(4))
        with pytest.raises(RuntimeError, match="close\\(\\) with a push"):
            client.close()
        client.pull()
        with pytest.raises(ValueError, match="pushed 3 elements"):
            client.push(torch.ones(3))
        with pytest.raises(ValueError, match="needs 3 ranks"):
            PSClient(comm, torch.zeros(4), 1, 2, lr=0.1)
        return client.pull() if client.push(torch.ones(4)) is None else None

    torch.testing.assert_close(launch(body, 1)[0], torch.full((4,), -0.2))  # two SGD steps, lr 0.1


def test_argument_errors():
    with pytest.raises(ValueError, match="shards=3 > workers=2"):
        ServerPlacement(2, 3, colocated=True)
    with pytest.raises(ValueError, match="integer >= 1"):
        ParameterServer(shards=0)
    with pytest.raises(ValueError, match="colocated must be True or False"):
        ParameterServer(2, colocated="yes")
    with pytest.raises(ValueError, match="at least one element per shard"):
        ServerPlacement(2, 4).pieces(torch.zeros(3))
    with pytest.raises(ValueError, match="unknown parameter-server policy 'bogus'; valid: 'bsp' or a Policy instance"):
        get_policy("bogus")

    def colocated_async(comm):
        PSClient(comm, torch.zeros(4), 2, 1, True, lr=0.1, policy=_TakeAnyApplyEach())

    with pytest.raises(RankError, match="asynchronous"):
        launch(colocated_async, 2)


def test_architecture_object():
    ps = ParameterServer(shards=2)
    assert ps.name == "ps" and repr(ps) == "ParameterServer(shards=2, colocated=False)"
    assert ps.world_size(4) == 6 and [ps.serves(r, 4) for r in range(6)] == [False] * 4 + [True] * 2
    co = ParameterServer(shards=2, colocated=True)
    assert co.world_size(4) == 4 and not any(co.serves(r, 4) for r in range(4))
    assert ServerPlacement(4, 2).describe() == "4 workers on ranks 0..3, 2 server(s) on ranks 4..5"
