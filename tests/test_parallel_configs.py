"""commlab.parallel.configs: parameter counts against the published sizes, FLOPs against Megatron's eq. (3)."""
import pytest

from commlab.parallel.configs import MODELS, ModelConfig, get_model


@pytest.mark.parametrize("name", list(MODELS))
def test_parameters_match_the_published_sizes(name):
    m = MODELS[name]
    assert m.params() == pytest.approx(m.published_params, rel=0.02)


def test_gpt_parameters_are_megatrons_formula():
    m = MODELS["gpt-1t"]
    l, h, v, s = m.layers, m.hidden, m.vocab, m.seq
    assert m.params() == pytest.approx(12 * l * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * l * h)) + 2 * h, rel=1e-12)  # + the final LayerNorm


@pytest.mark.parametrize("recompute, k, vocab_div", [("full", 96, 16), ("none", 72, 12)])
def test_flops_are_narayanan_eq_3(recompute, k, vocab_div):
    m = MODELS["gpt3-175b"]
    b, s, l, h, v = 1536, m.seq, m.layers, m.hidden, m.vocab
    want = k * b * s * l * h * h * (1 + s / (6 * h) + v / (vocab_div * l * h))
    assert m.flops(b, recompute) == pytest.approx(want, rel=1e-12)


def test_grouped_query_attention_shrinks_k_and_v():
    dense = ModelConfig("x", 2, 64, 8, 16, 100, gpt=False)
    gqa = ModelConfig("x", 2, 64, 8, 16, 100, kv_heads=2, gpt=False)
    assert dense.layer_matrices() - gqa.layer_matrices() == 2 * 64 * (64 - 16)


def test_unknown_model_names_the_valid_ones():
    with pytest.raises(ValueError, match="gpt3-175b"):
        get_model("gpt-5")
    assert get_model(MODELS["gpt-1t"]) is MODELS["gpt-1t"]
