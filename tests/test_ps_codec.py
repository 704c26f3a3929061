"""Compression over the parameter server: compressed pushes, compressed replies (double compression)."""
import pytest
import torch

from commlab.arch.ps import PSClient, run_server
from commlab.arch.ps_codec import PSCodec
from commlab.compress import get
from commlab.runtime import launch
from commlab.train import Trainer

KW = dict(model="mlp", data="digits", workers=4, arch="ps", lr=0.1, progress=False, eval_every=40)


def _run(push, reply, steps=5, workers=3, dim=1000):
    def body(comm):
        x0 = torch.linspace(-1, 1, dim)
        codec = PSCodec(get(push), get(reply))
        if comm.rank == workers:
            out = run_server(comm, x0, workers, lr=0.5, codec=codec)
            return out, {k: v.clone() for k, v in codec.held.items()}
        client = PSClient(comm, x0, workers, lr=0.5, codec=codec)
        g = torch.Generator().manual_seed(comm.rank)
        for _ in range(steps):
            client.push(torch.randn(dim, generator=g))
            x = client.pull()
        client.close()
        return x, comm.stats.snapshot()

    return launch(body, workers + 1)


def test_payload_bytes_on_both_links():
    from commlab.compress.qsgd import qsgd_nbytes

    out = _run("qsgd(levels=16)", "topk(0.05)", steps=4)
    push = get("qsgd(levels=16)").compress(torch.randn(1000), key=0).nbytes
    reply = get("topk(0.05)").compress(torch.randn(1000), key=0).nbytes
    assert push == qsgd_nbytes((1000,), 16, 512)
    for x, stats in out[:-1]:
        assert stats.bytes_sent == 4 * push + 0 and stats.bytes_recv == 4 * reply  # goodbye: 0 bytes
    server, _ = out[-1]
    assert server["stats"].bytes_recv == 3 * 4 * push and server["stats"].bytes_sent == 3 * 4 * reply


def test_worker_and_server_agree_on_the_compressed_copy():
    out = _run(None, "topk(0.02)", steps=6)
    server, held = out[-1]
    for w, (x, _) in enumerate(out[:-1]):
        assert torch.equal(x, held[(0, w)])  # the worker holds exactly what the server thinks it holds
    # what top-k left out is still owed: the server's x differs from the copy, by less than it moved
    moved = (server["params"] - torch.linspace(-1, 1, 1000)).norm()
    assert 0 < (server["params"] - held[(0, 0)]).norm() < moved


def test_fp16_both_ways_trains_like_fp32_with_half_the_bytes():
    base = Trainer(**KW).fit(steps=40)
    half = Trainer(compress="fp16", reply_compress="fp16", **KW).fit(steps=40)
    assert half.loss == pytest.approx(base.loss, rel=2e-3)
    assert sum(half.bytes_sent[0]) == pytest.approx(sum(base.bytes_sent[0]) / 2, rel=0.01)
    assert sum(half.bytes_recv[0]) == pytest.approx(sum(base.bytes_recv[0]) / 2, rel=0.01)


def test_double_quantization_converges():
    h = Trainer(compress="qsgd(levels=16)", reply_compress="qsgd(levels=16)", **KW).fit(steps=40)
    base = Trainer(**KW).fit(steps=40)
    assert abs(h.final_accuracy - base.final_accuracy) < 0.05
    assert sum(h.bytes_recv[0]) < 0.25 * sum(base.bytes_recv[0])


def test_signsgd_majority_vote_at_the_server():
    h = Trainer(compress="signsgd", reply_compress="fp16", **dict(KW, lr=0.003)).fit(steps=40)
    assert h.loss[-1] < h.loss[0]


def test_bad_combinations_are_refused():
    with pytest.raises(ValueError, match="reply_compress='fp16' compresses a parameter server's replies; "
                                         "arch='native' has none; valid: arch=ps"):
        Trainer(reply_compress="fp16")
    with pytest.raises(ValueError, match="drop the '\\+ef'"):
        Trainer(arch="ps", reply_compress="topk(0.1)+ef")
    with pytest.raises(ValueError, match="compress='powersgd' over arch='ps': aggregates by its own all-reduce protocol"):
        Trainer(arch="ps", compress="powersgd")
    with pytest.raises(ValueError, match="keeps per-round state in its aggregation.*sync='bsp'"):
        Trainer(arch="ps", sync="asp", compress="diana")
    with pytest.raises(ValueError, match=r"over arch='ps\(shards=2, colocated=True\)': carries no compression"):
        Trainer(arch="ps(shards=2, colocated=True)", compress="fp16")
