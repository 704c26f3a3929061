"""arch.ps_scheduled: shard bounds and the parts of a message each server gets, and a scheduled
server run (the step in many messages) against the unscheduled parameter server, bit for bit."""
import random

import pytest
import torch

from commlab.arch.ps import PSClient, run_server
from commlab.arch.ps_layout import ServerPlacement
from commlab.arch.ps_scheduled import ScheduledPSClient, parts, run_scheduled_server, shard_bounds
from commlab.runtime import RankError, launch


def test_shard_bounds_are_tensor_split():
    for total, shards in ((10, 3), (7, 7), (100, 1), (1001, 4)):
        bounds = shard_bounds(ServerPlacement(2, shards), total)
        pieces = torch.arange(total).tensor_split(shards)
        assert bounds == [(int(p[0]), int(p[-1]) + 1) for p in pieces]
    assert shard_bounds(ServerPlacement(2, 3), 10) == [(0, 4), (4, 7), (7, 10)]


def test_parts_by_hand():
    bounds = [(0, 4), (4, 7), (7, 10)]
    messages = [[(0, 3), (8, 10)], [(3, 8)]]
    assert parts(messages, bounds) == [{0: [(0, 3)], 2: [(8, 10)]}, {0: [(3, 4)], 1: [(4, 7)], 2: [(7, 8)]}]


def _random_messages(rng, total, k):
    """The flat vector cut into pieces, dealt into k messages in a shuffled order."""
    cuts = sorted(rng.sample(range(1, total), min(total - 1, rng.randint(k, 3 * k))))
    pieces = list(zip([0] + cuts, cuts + [total]))
    rng.shuffle(pieces)
    messages = [[] for _ in range(k)]
    for i, p in enumerate(pieces):
        messages[i % k if i < k else rng.randrange(k)].append(p)
    return messages


def test_parts_cover_every_element_once():
    rng = random.Random(0)
    for _ in range(50):
        total, shards = rng.randint(5, 300), rng.randint(1, 5)
        bounds = shard_bounds(ServerPlacement(2, shards), total)
        messages = _random_messages(rng, total, rng.randint(1, 6))
        seen = torch.zeros(total, dtype=torch.long)
        for ranges, per in zip(messages, parts(messages, bounds)):
            for s, clipped in per.items():
                lo, hi = bounds[s]
                for a, b in clipped:
                    assert lo <= a < b <= hi
                    assert any(x <= a and b <= y for x, y in ranges)  # inside one of the message's ranges
                    seen[a:b] += 1
        assert bool((seen == 1).all())


# ----------------------------------------------------------------------------- whole runs
W, STEPS, TOTAL = 3, 4, 97
HP = dict(lr=0.1, momentum=0.9, weight_decay=0.01)


def _grad(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(TOTAL, generator=g)


def _run(comm, shards, messages):
    init = torch.linspace(-1, 1, TOTAL)
    layout = ServerPlacement(W, shards)
    if comm.rank >= W:
        if messages is None:
            return run_server(comm, init.clone(), W, shards, **HP)
        return run_scheduled_server(comm, init.clone(), W, shards, messages, **HP)
    params = init.clone()
    if messages is None:
        client = PSClient(comm, init.clone(), W, shards, **HP)
    else:
        client = ScheduledPSClient(comm, W, shards, messages, TOTAL)
    for step in range(STEPS):
        g = _grad(comm.rank, step) + 0.1 * params  # the gradient depends on the parameters
        if messages is None:
            client.push(g)
            params = client.pull()
        else:
            for m, ranges in enumerate(messages):
                new = client.exchange(m, torch.cat([g[a:b] for a, b in ranges]))
                at = 0
                for a, b in ranges:
                    params[a:b] = new[at:at + b - a]
                    at += b - a
    client.close()
    assert layout.world_size == comm.world_size
    return {"params": params, "stats": comm.stats.snapshot()}


@pytest.mark.parametrize("shards", [1, 2, 3])
def test_scheduled_server_equals_the_unscheduled_bit_for_bit(shards):
    rng = random.Random(shards)
    base = launch(_run, W + shards, args=(shards, None))
    for trial in range(3):
        messages = _random_messages(rng, TOTAL, rng.randint(1, 7))
        out = launch(_run, W + shards, args=(shards, messages))
        for w in range(W):  # every worker holds the unscheduled parameters
            assert torch.equal(out[w]["params"], base[w]["params"]), (trial, w)
        for s in range(shards):  # and every server its shard of them
            srv, ref = out[W + s], base[W + s]
            assert srv["role"] == "server" and srv["updates"] == ref["updates"] == STEPS
            assert torch.equal(srv["params"], ref["params"])
            assert srv["applied"] == ref["applied"]
        # a worker's bytes: its gradient up and its parameters down, as unscheduled
        for w in range(W):
            assert out[w]["stats"].bytes_sent == base[w]["stats"].bytes_sent
            assert out[w]["stats"].bytes_recv == base[w]["stats"].bytes_recv


def _leaves_early(comm, messages):
    if comm.rank >= W:
        return run_scheduled_server(comm, torch.zeros(TOTAL), W, 1, messages, lr=0.1)
    client = ScheduledPSClient(comm, W, 1, messages, TOTAL)
    if comm.rank == 0:  # sends its first message of the step, then leaves
        client.comm.isend(torch.ones(messages[0][0][1] - messages[0][0][0]), W, 21)
        client.close()
        return None
    for m, ranges in enumerate(messages):
        client.exchange(m, torch.cat([torch.ones(b - a) for a, b in ranges]))
    client.close()


def test_a_worker_leaving_mid_step_is_an_error():
    messages = [[(0, 50)], [(50, TOTAL)]]
    with pytest.raises(RankError, match="left in the middle of a step"):
        launch(_leaves_early, W + 1, args=(messages,), timeout=10)


def test_server_rank_checks():
    def wrong(comm):
        return run_scheduled_server(comm, torch.zeros(TOTAL), W, 1, [[(0, TOTAL)]], lr=0.1)

    with pytest.raises(RankError, match="not a server rank"):
        launch(wrong, W + 1, timeout=10)
