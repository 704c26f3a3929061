"""Small trainable models, large counting-only models, and model intensity.

Trainable (built on the default device, cheap enough for a laptop CPU):

* :func:`mlp` -- a multilayer perceptron (flattens its input first).
* :func:`small_cnn` -- a two-convolution network for 8x8 images (sklearn digits).
* :func:`resnet20` -- the CIFAR ResNet of He et al., "Deep Residual Learning for
  Image Recognition" (CVPR 2016), Sec. 4.2, with the parameter-free "option A"
  shortcuts: 0.27M parameters.
* :func:`tiny_transformer` -- a pre-norm encoder classifier in the style of
  Vaswani et al., "Attention Is All You Need" (NeurIPS 2017).

Counting only (built on the ``meta`` device by default: shapes, no storage):

* :func:`resnet50` -- ResNet-50 (He et al. 2016, Table 1), 25,557,032 parameters.
* :func:`bert` -- BERT-Base / BERT-Large of Devlin et al., "BERT: Pre-training of
  Deep Bidirectional Transformers for Language Understanding" (NAACL 2019), as
  ``transformers.BertForPreTraining`` with random initialisation.

Model intensity ``I = C / D`` (FLOPs per sample over parameters) follows Shi, Tang,
Chu, Liu, Wang and Li, "A Quantitative Survey of Communication Optimizations in
Distributed Deep Learning" (IEEE Network 35(3), 2021): a step of data-parallel SGD
computes ``C * batch`` FLOPs per worker and all-reduces ``D`` gradients, so a low
intensity means communication is hard to hide behind computation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

# Figures from Shi et al. (IEEE Network 2021) as relayed to us: BERT-Large has 336M
# parameters, i.e. 1.34 GB of fp32 gradients per step, and the intensities are about
# 470, 249 and 248. We could not find the paper's text to confirm them, nor how it
# counted C; the order ResNet-50, BERT-Base, BERT-Large is our assumption.
SURVEY_FIGURES: dict[str, dict[str, float]] = {
    "resnet50": {"params": 25.6e6, "intensity": 470.0, "gradient_bytes": 4 * 25.6e6},
    "bert-base": {"params": 110e6, "intensity": 249.0, "gradient_bytes": 4 * 110e6},
    "bert-large": {"params": 336e6, "intensity": 248.0, "gradient_bytes": 4 * 336e6},
}


# ----------------------------------------------------------------------------- small
def mlp(in_features: int, num_classes: int, hidden: Sequence[int] = (64,)) -> nn.Module:
    """Flatten, then ``Linear -> ReLU`` for each width in ``hidden``, then a linear head."""
    layers: list[nn.Module] = [nn.Flatten()]
    width = in_features
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, num_classes))
    return nn.Sequential(*layers)


def small_cnn(in_channels: int = 1, num_classes: int = 10, channels: Sequence[int] = (16, 32)) -> nn.Module:
    """Two 3x3 convolutions for tiny images such as the 8x8 digits; input ``(B, C, H, W)``.

    ``conv-ReLU-maxpool(2)-conv-ReLU-adaptive avgpool(2x2)-linear``; the adaptive pool
    makes the head independent of the image size (anything of at least 2x2 works).
    """
    c1, c2 = channels
    return nn.Sequential(
        nn.Conv2d(in_channels, c1, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
        nn.Flatten(), nn.Linear(4 * c2, num_classes),
    )


class _BasicBlock(nn.Module):
    """Two 3x3 conv-BN layers with an identity shortcut ("option A" when shapes change:
    subsample by 2 and zero-pad the new channels, so the shortcut has no parameters)."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.stride, self.pad = stride, c_out - c_in

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = x[:, :, :: self.stride, :: self.stride] if self.stride > 1 else x
        if self.pad:
            shortcut = F.pad(shortcut, (0, 0, 0, 0, 0, self.pad))
        return F.relu(out + shortcut)


def resnet20(num_classes: int = 10, in_channels: int = 3) -> nn.Module:
    """ResNet-20 for 32x32 images (He et al. 2016, Sec. 4.2): 3 stages of 3 basic blocks
    with 16/32/64 channels, global average pooling and a linear head (269,722 params)."""
    layers: list[nn.Module] = [nn.Conv2d(in_channels, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    c_in = 16
    for c_out, stride in ((16, 1), (32, 2), (64, 2)):
        for i in range(3):
            layers.append(_BasicBlock(c_in, c_out, stride if i == 0 else 1))
            c_in = c_out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, num_classes)]
    return nn.Sequential(*layers)


class TinyTransformer(nn.Module):
    """Token + learned position embeddings, a pre-norm ``nn.TransformerEncoder``, mean
    pooling over positions and a linear head. Input: ``LongTensor (B, L)``, ``L <= seq_len``."""

    def __init__(self, vocab_size: int, num_classes: int, d_model: int = 32, heads: int = 2,
                 layers: int = 2, seq_len: int = 16, dropout: float = 0.0):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        h = self.encoder(self.tok(tokens) + self.pos(positions))
        return self.head(self.norm(h.mean(dim=1)))


def tiny_transformer(vocab_size: int, num_classes: int, d_model: int = 32, heads: int = 2,
                     layers: int = 2, seq_len: int = 16, dropout: float = 0.0) -> nn.Module:
    """A small encoder-only sequence classifier (see :class:`TinyTransformer`); with the
    defaults and 16 symbols / 4 classes it has 26,628 parameters."""
    return TinyTransformer(vocab_size, num_classes, d_model, heads, layers, seq_len, dropout)


# ----------------------------------------------------------------------------- large
class _Bottleneck(nn.Module):
    """1x1 reduce, 3x3, 1x1 expand x4. The stride sits on the 3x3 convolution (the
    "v1.5" variant of torchvision): same parameters as the paper's, 4.1 instead of 3.8
    G multiply-accumulates per 224x224 image."""

    def __init__(self, c_in: int, width: int, stride: int):
        super().__init__()
        c_out = 4 * width
        self.body = nn.Sequential(
            nn.Conv2d(c_in, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, c_out, 1, bias=False), nn.BatchNorm2d(c_out),
        )
        self.shortcut = nn.Identity()
        if stride != 1 or c_in != c_out:  # projection shortcut ("option B")
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                          nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.body(x) + self.shortcut(x))


def resnet50(num_classes: int = 1000, in_channels: int = 3, device: str | torch.device = "meta") -> nn.Module:
    """ResNet-50 (He et al. 2016, Table 1) for 224x224 images: 25,557,032 parameters at
    1000 classes. Built on ``device`` (default ``meta``: counting only, no memory)."""
    with torch.device(device):
        layers: list[nn.Module] = [nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                   nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
        c_in = 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(_Bottleneck(c_in, width, stride if i == 0 else 1))
                c_in = 4 * width
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, num_classes)]
        return nn.Sequential(*layers)


_BERT_SIZES = {"base": (12, 768, 12), "large": (24, 1024, 16)}  # layers, hidden, heads


def bert(size: str = "base", device: str | torch.device = "meta") -> nn.Module:
    """BERT-Base (110.1M) or BERT-Large (336.2M) as ``transformers.BertForPreTraining``.

    We use the pre-training model (encoder + pooler + masked-LM head, whose decoder is
    tied to the word embeddings, + next-sentence head) because that is what is trained
    in the data-parallel benchmarks; the bare ``BertModel`` has 109.5M / 335.1M. The
    default vocabulary (30,522) and 512 positions are used; weights are random.
    """
    if size not in _BERT_SIZES:
        raise ValueError(f"unknown BERT size {size!r}; valid sizes: {sorted(_BERT_SIZES)}")
    from transformers import BertConfig, BertForPreTraining

    layers, hidden, heads = _BERT_SIZES[size]
    config = BertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=4 * hidden)
    with torch.device(device):
        return BertForPreTraining(config)


# ----------------------------------------------------------------------------- registry
_REGISTRY = {
    "mlp": mlp,
    "cnn": small_cnn,
    "resnet20": resnet20,
    "transformer": tiny_transformer,
    "resnet50": resnet50,
    "bert-base": lambda **kw: bert("base", **kw),
    "bert-large": lambda **kw: bert("large", **kw),
}


def _check_name(name: str) -> None:
    if name not in _REGISTRY:
        raise ValueError(f"unknown model {name!r}; valid names: {', '.join(_REGISTRY)}")


def build(name: str, **kw) -> nn.Module:
    """Build a model by name, forwarding keyword arguments to its builder, e.g.
    ``build("mlp", in_features=64, num_classes=10)``."""
    _check_name(name)
    return _REGISTRY[name](**kw)


def count_params(model: nn.Module) -> int:
    """Number of parameters (shared/tied tensors counted once); works on ``meta``."""
    return sum(p.numel() for p in model.parameters())


def _floating_tensors(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out] if out.is_floating_point() else []
    if isinstance(out, Mapping):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _floating_tensors(o)]
    return []


def flops_per_sample(model: nn.Module, example_input, backward: bool = True) -> float:
    """FLOPs of one forward (and backward) pass divided by the batch size.

    ``example_input`` is a batched tensor or a dict of keyword tensors (the batch size is
    read from the first dimension of the first one). Counting uses
    ``torch.utils.flop_counter.FlopCounterMode``, which only counts matrix-multiply-like
    ops (mm, addmm, bmm, convolution, scaled-dot-product attention) at 2 FLOPs per
    multiply-accumulate; element-wise ops, normalisation, activations, pooling and
    embedding lookups count as zero. Floating-point inputs are made to require grad, so
    the backward pass computes both input and weight gradients and costs 2x the forward
    (the usual "training = 3x forward" convention; a real first layer skips its input
    gradient, a few percent less). Meta-device models and inputs work. The model is
    left as it was: the pass runs in eval mode (so BatchNorm running statistics are not
    updated; the count is the same) and existing ``.grad`` tensors are restored.
    """
    def prepare(t):
        grad = isinstance(t, torch.Tensor) and t.is_floating_point()
        return t.detach().requires_grad_(True) if grad else t

    named = example_input if isinstance(example_input, Mapping) else {"": example_input}
    batch = next(iter(named.values())).shape[0]
    kwargs = {k: prepare(v) for k, v in named.items()}
    args = (kwargs.pop(""),) if "" in kwargs else ()
    modes = {m: m.training for m in model.modules()}
    grads = {p: p.grad for p in model.parameters()}
    model.eval()
    model.zero_grad(set_to_none=True)
    counter = FlopCounterMode(display=False)
    try:
        with torch.enable_grad(), counter:
            out = model(*args, **kwargs)
            if backward:
                sum(t.float().sum() for t in _floating_tensors(out)).backward()
    finally:
        for m, training in modes.items():
            m.training = training
        for p, g in grads.items():
            p.grad = g
    return counter.get_total_flops() / batch


@dataclasses.dataclass(frozen=True)
class ModelStats:
    """Parameters ``D``, training FLOPs per sample ``C``, intensity ``I = C / D``, and
    the fp32 gradient size all-reduced each step (``4 * D`` bytes)."""

    name: str
    params: int
    flops_per_sample: float
    intensity: float
    gradient_bytes: int
    input: str


def model_intensity(name: str, seq_len: int = 128) -> ModelStats:
    """Measure :class:`ModelStats` for a registry model on its standard input.

    Standard inputs: ``mlp`` 64 features -> 10 classes (digits); ``cnn`` 1x8x8 (digits);
    ``resnet20`` 3x32x32 (CIFAR-10); ``transformer`` 16 tokens from a 16-symbol
    vocabulary, 4 classes; ``resnet50`` 3x224x224 (ImageNet, 1000 classes);
    ``bert-*`` ``seq_len`` tokens (default 128, the length of BERT's first pre-training
    phase, Devlin et al. 2019), with the MLM head applied to every position as
    ``BertForPreTraining`` does. C is forward + backward in FLOPs (2 per MAC).

    Why our numbers differ from :data:`SURVEY_FIGURES` (we measure ResNet-50 960,
    BERT-Base 777, BERT-Large 778 against their 470, 249, 248): we count 2 FLOPs per
    multiply-accumulate over forward + backward. No single convention reproduces all
    three survey figures: MACs over forward + backward give ResNet-50 480 (close to 470)
    but BERT 388, while FLOPs of the forward pass alone give BERT 259 (close to 249) but
    ResNet-50 320, so the survey seems to have taken C from different conventions or
    sequence lengths per model. BERT's intensity also grows linearly with ``seq_len`` and
    depends on whether the MLM head runs on every token or only the ~15% masked ones.
    """
    _check_name(name)
    if name == "mlp":
        model, x, desc = mlp(64, 10), torch.zeros(1, 64), "64 features"
    elif name == "cnn":
        model, x, desc = small_cnn(1, 10), torch.zeros(1, 1, 8, 8), "1x8x8 image"
    elif name == "resnet20":
        model, x, desc = resnet20(10), torch.zeros(1, 3, 32, 32), "3x32x32 image"
    elif name == "transformer":
        model, x, desc = tiny_transformer(16, 4), torch.zeros(1, 16, dtype=torch.long), "16 tokens"
    elif name == "resnet50":
        model, x, desc = resnet50(), torch.zeros(1, 3, 224, 224, device="meta"), "3x224x224 image"
    else:
        model = build(name)
        x = {"input_ids": torch.zeros(1, seq_len, dtype=torch.long, device="meta")}
        desc = f"{seq_len} tokens"
    d = count_params(model)
    c = flops_per_sample(model, x, backward=True)
    return ModelStats(name, d, c, c / d, 4 * d, desc)
