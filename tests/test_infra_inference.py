"""commlab.infra.inference: the KV cache's bytes, decoding's memory bound, tensor-parallel
decoding's two all-reduces per layer, pipeline inference, prefill and KV transfer; refusals."""
import pytest

from commlab.arch import halving_doubling, ring, tree
from commlab.infra import inference as inf
from commlab.parallel.configs import MODELS
from commlab.net.link import get_link as link


def test_kv_bytes_from_the_architecture():
    # LLaMA-2 70B: 80 layers, 8 KV heads of 128 -> 2 x 80 x 8 x 128 x 2 bytes = 327,680 per token
    assert inf.kv_bytes("llama2-70b", 1) == 327_680
    assert inf.kv_bytes("gpt3-175b", 10) == 10 * 2 * 96 * 96 * 128 * 2  # no grouped-query attention


def test_decode_is_memory_bound_and_divides_by_tp():
    m = MODELS["llama2-70b"]
    one = inf.decode_compute(m, 1, 1, 1024, "a100")
    assert one == pytest.approx((2 * m.params() + inf.kv_bytes(m, 1024)) / 2.039e12)
    assert inf.decode_compute(m, 8, 1, 1024, "a100") == pytest.approx(one / 8)
    big = inf.decode_compute(m, 1, 4096, 16, "a100")  # a huge batch turns it compute-bound
    assert big == pytest.approx(2 * m.params() * 4096 / 312e12)


def test_tp_decode_adds_two_allreduces_per_layer():
    m = MODELS["llama2-70b"]
    step = inf.tp_decode(m, 8, "NVLink3-A100")
    assert step.communication == pytest.approx(2 * 80 * ring.cost(2 * m.hidden, 8, link("NVLink3-A100")))
    hd = inf.tp_decode(m, 8, "NVLink3-A100", allreduce="halving_doubling")
    assert hd.communication == pytest.approx(2 * 80 * halving_doubling.cost(2 * m.hidden, 8, link("NVLink3-A100")))
    assert hd.communication < step.communication  # latency-bound: fewer start-ups win
    tr = inf.tp_decode(m, 8, "NVLink3-A100", allreduce="tree")  # any flat all-reduce of the registry
    assert tr.communication == 2 * 80 * tree.cost(2 * m.hidden, 8, link("NVLink3-A100"))
    assert inf.tp_decode(m, 1).communication == 0
    # the comm share grows with tp; across nodes over TCP, more tp ends up slower
    shares = [inf.tp_decode(m, t).comm_share for t in (2, 4, 8, 16)]
    assert shares == sorted(shares)
    assert inf.tp_decode(m, 16, "tcp-100GbE").time > inf.tp_decode(m, 4, "tcp-100GbE").time


def test_pipeline_latency_and_throughput():
    m = MODELS["gpt3-175b"]
    one, four = inf.pipeline_decode(m, 1), inf.pipeline_decode(m, 4)
    hop = link("100GbIB-survey").time(2 * m.hidden)
    assert four["latency"] == pytest.approx(one["latency"] + 3 * hop)
    assert four["throughput"] == pytest.approx(4 * one["throughput"])


def test_prefill_and_kv_transfer():
    m = MODELS["llama2-70b"]
    assert inf.prefill_time(m, 1000, 1, efficiency=1.0) == pytest.approx(
        (2 * m.params() * 1000 + 2 * 80 * 1000 ** 2 * 8192) / 312e12)
    assert inf.kv_transfer(m, 4096, "200GbHDR-IB", tp=8) == pytest.approx(link("200GbHDR-IB").time(327_680 * 4096 / 8))
    assert inf.kv_transfer("gpt3-175b", 4096) > 10 * inf.kv_transfer(m, 4096)  # GQA's 8x and the size


def test_refusals():
    with pytest.raises(ValueError, match="unknown model 'gpt5'; valid: gpt3-175b"):
        inf.kv_bytes("gpt5", 1)
    with pytest.raises(ValueError, match="unknown accelerator 'tpu'; valid: a100, h100"):
        inf.decode_compute("llama2-70b", device="tpu")
    with pytest.raises(ValueError, match="tp=0 must be an integer >= 1"):
        inf.tp_decode("llama2-70b", 0)
    # the all-reduces are the one registry's flat ones (hierarchical needs nodes: not here)
    with pytest.raises(ValueError, match="allreduce='hierarchical'; valid: naive, ring, tree, double_tree, "
                                         "halving_doubling$"):
        inf.tp_decode("llama2-70b", 2, allreduce="hierarchical")
