"""Transformer configurations of real large models, their parameters and FLOPs, for the planner.

Sizes from the papers: GPT-3 175B (Brown et al. 2020, Table 2.1), LLaMA-2 70B (Touvron et al. 2023:
grouped-query attention with 8 key/value heads, a SwiGLU MLP of 28,672, untied embeddings), and the
GPT models of Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM", SC'21, Table 1 (145.6B, 310.1B, 529.6B, 1008.0B; vocabulary 51,200, sequence 2,048).

Parameters, counted from the architecture (:meth:`ModelConfig.params`): per layer the Q, K, V and
output matrices, h (h + 2 h k/a) + h^2 (k key/value heads of a), the MLP, 2 h f (3 h f gated), and
for GPT the biases and LayerNorms, 13 h with f = 4h; the embeddings (V + s) h for GPT (learned
positions, output layer tied), 2 V h for LLaMA (untied, rotary positions). For GPT this is
Megatron's 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)).

Training FLOPs per iteration of B sequences (:meth:`ModelConfig.flops`): the forward pass is
2 (layer matrix parameters) B s + 4 B s^2 h l (attention scores and values) + 2 B s h V (logits);
backward twice that; full activation recomputation runs the layers' forward once more. For GPT
that is Narayanan et al.'s eq. (3): 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with recomputation,
72 B s l h^2 (1 + s/(6h) + V/(12 l h)) without.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import checks


@dataclass(frozen=True)
class ModelConfig:
    """A transformer's sizes (layers, hidden, heads, sequence, vocabulary, MLP width, key/value heads)
    and its published parameter count with the source."""
    name: str
    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    ffn: int = 0  # 0: 4 * hidden
    kv_heads: int = 0  # 0: heads (no grouped-query attention)
    gated: bool = False  # SwiGLU MLP (three matrices)
    gpt: bool = True  # biases, LayerNorms, learned positions, tied output layer
    published_params: float = 0.0
    source: str = ""

    @property
    def f(self) -> int:
        """The MLP's inner width: ``ffn``, or 4 * hidden when ffn is 0."""
        return self.ffn or 4 * self.hidden

    def layer_matrices(self) -> int:
        """Matrix parameters of one layer (what the FLOPs count)."""
        h, kv = self.hidden, self.kv_heads or self.heads
        attention = h * (h + 2 * h * kv // self.heads) + h * h
        return attention + (3 if self.gated else 2) * h * self.f

    def params(self) -> float:
        """Parameters counted from the architecture: each layer's matrices, biases and norms,
        plus the embeddings (tied output for GPT, untied for LLaMA)."""
        h, l, v = self.hidden, self.layers, self.vocab
        if self.gpt:
            small = 3 * h + h + self.f + h + 4 * h  # qkv and output biases, MLP biases, two LayerNorms
            return l * (self.layer_matrices() + small) + (v + self.seq) * h + 2 * h
        return l * (self.layer_matrices() + 2 * h) + 2 * v * h + h  # RMSNorms, untied embeddings

    def flops(self, batch: int, recompute: str = "full") -> float:
        """Training FLOPs of one iteration of ``batch`` sequences (see the module doc)."""
        tokens = batch * self.seq
        layers = self.layers * (2 * self.layer_matrices() * tokens + 4 * tokens * self.seq * self.hidden)
        logits = 2 * tokens * self.hidden * self.vocab
        return (4 if recompute == "full" else 3) * layers + 3 * logits


MODELS = {m.name: m for m in (
    ModelConfig("gpt3-175b", 96, 12288, 96, 2048, 51200, published_params=175e9,
                source="Brown et al. 2020 (vocabulary padded to 51,200 as in Megatron-LM)"),
    ModelConfig("llama2-70b", 80, 8192, 64, 4096, 32000, ffn=28672, kv_heads=8, gated=True, gpt=False,
                published_params=70e9, source="Touvron et al. 2023, LLaMA 2"),
    ModelConfig("gpt-145b", 80, 12288, 96, 2048, 51200, published_params=145.6e9,
                source="Narayanan et al. SC'21, Table 1"),
    ModelConfig("gpt-310b", 96, 16384, 128, 2048, 51200, published_params=310.1e9,
                source="Narayanan et al. SC'21, Table 1"),
    ModelConfig("gpt-530b", 105, 20480, 128, 2048, 51200, published_params=529.6e9,
                source="Narayanan et al. SC'21, Table 1"),
    ModelConfig("gpt-1t", 128, 25600, 160, 2048, 51200, published_params=1008.0e9,
                source="Narayanan et al. SC'21, Table 1"),
)}


def get_model(spec) -> ModelConfig:
    """A :class:`ModelConfig` as it is, or the one :data:`MODELS` names; ValueError otherwise."""
    return spec if isinstance(spec, ModelConfig) else MODELS[checks.choice("model", spec, MODELS)]
