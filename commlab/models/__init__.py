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

* :func:`resnet50` -- ResNet-50 (He et al. 2016, Table 1), 25,557,032 parameters; any other
  bottleneck ResNet of that table by its blocks per stage (:func:`bottleneck_resnet`).
* :func:`bert` -- BERT-Base / BERT-Large of Devlin et al., "BERT: Pre-training of
  Deep Bidirectional Transformers for Language Understanding" (NAACL 2019), as
  ``transformers.BertForPreTraining`` with random initialisation.

One registry, :data:`MODELS`: each name's builder, how to size it for a data set (what the
Trainer trains, :func:`build_model`), and its standard input (:func:`model_intensity`).
Counting parameters and FLOPs is :mod:`commlab.models.intensity`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .intensity import SURVEY_FIGURES, ModelStats, count_params, flops_per_sample  # noqa: F401 - counting, for users of models


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
        """Logits ``(B, num_classes)`` for tokens ``(B, L)``: encode, mean-pool over positions, head."""
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
    return bottleneck_resnet((3, 4, 6, 3), num_classes, in_channels, device)


def bottleneck_resnet(blocks: tuple, num_classes: int = 1000, in_channels: int = 3,
                      device: str | torch.device = "meta") -> nn.Module:
    """A bottleneck ResNet of He et al. (2016, Table 1) with ``blocks`` per stage: (3, 4, 6, 3) is
    ResNet-50, (3, 4, 23, 3) ResNet-101, (3, 8, 36, 3) ResNet-152. Built on ``device``."""
    with torch.device(device):
        layers: list[nn.Module] = [nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                   nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
        c_in = 64
        for width, blocks, stride in zip((64, 128, 256, 512), blocks, (1, 2, 2, 2)):
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
def _cnn_for(ds, **kw) -> nn.Module:
    if len(ds.input_shape) != 3:
        raise ValueError(f"model 'cnn' needs image data (C, H, W); {ds.name!r} has samples of shape {ds.input_shape}"
                         " (use data='digits' with data_kw={'image': True})")
    return small_cnn(ds.input_shape[0], ds.num_classes, **kw)


def _transformer_for(ds, **kw) -> nn.Module:
    if ds.vocab_size is None:
        raise ValueError(f"model 'transformer' needs token data (data='tokens'), got {ds.name!r}")
    return tiny_transformer(ds.vocab_size, ds.num_classes, **kw)


def _bert_standard(size: str):
    return lambda seq: (bert(size), {"input_ids": torch.zeros(1, seq, dtype=torch.long, device="meta")},
                        f"{seq} tokens")


@dataclass(frozen=True)
class Entry:
    """A registry model: ``build(**kw)`` with its own arguments; ``for_data(dataset, **kw)``
    sized for a data set (None: counting only, too large to train here); ``standard(seq_len)``
    the model on its standard input, ``(model, example input, description)``."""

    build: Callable
    for_data: Callable | None
    standard: Callable


MODELS = {
    "mlp": Entry(mlp, lambda ds, **kw: mlp(ds.in_features, ds.num_classes, **kw),
                 lambda seq: (mlp(64, 10), torch.zeros(1, 64), "64 features")),
    "cnn": Entry(small_cnn, _cnn_for, lambda seq: (small_cnn(1, 10), torch.zeros(1, 1, 8, 8), "1x8x8 image")),
    "resnet20": Entry(resnet20, lambda ds, **kw: resnet20(ds.num_classes, ds.input_shape[0], **kw),
                      lambda seq: (resnet20(10), torch.zeros(1, 3, 32, 32), "3x32x32 image")),
    "transformer": Entry(tiny_transformer, _transformer_for,
                         lambda seq: (tiny_transformer(16, 4), torch.zeros(1, 16, dtype=torch.long), "16 tokens")),
    "resnet50": Entry(resnet50, None, lambda seq: (resnet50(), torch.zeros(1, 3, 224, 224, device="meta"),
                                                   "3x224x224 image")),
    "bert-base": Entry(lambda **kw: bert("base", **kw), None, _bert_standard("base")),
    "bert-large": Entry(lambda **kw: bert("large", **kw), None, _bert_standard("large")),
}
TRAINABLE = tuple(name for name, e in MODELS.items() if e.for_data is not None)


def _check_name(name: str) -> None:
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; valid names: {', '.join(MODELS)}")


def build(name: str, **kw) -> nn.Module:
    """Build a model by name, forwarding keyword arguments to its builder, e.g.
    ``build("mlp", in_features=64, num_classes=10)``."""
    _check_name(name)
    return MODELS[name].build(**kw)


def build_model(name, dataset, **kw) -> nn.Module:
    """A model sized for ``dataset`` (a :class:`commlab.data.Dataset`): a trainable registry
    name, or a callable ``f(dataset) -> nn.Module``."""
    if callable(name):
        return name(dataset)
    if name not in TRAINABLE:
        raise ValueError(f"unknown trainable model {name!r}; valid: {', '.join(TRAINABLE)} "
                         "(or a function dataset -> nn.Module)")
    return MODELS[name].for_data(dataset, **kw)


def model_intensity(name: str, seq_len: int = 128) -> ModelStats:
    """Measure :class:`~commlab.models.intensity.ModelStats` for a registry model on its standard input.

    Standard inputs: ``mlp`` 64 features -> 10 classes (digits); ``cnn`` 1x8x8 (digits);
    ``resnet20`` 3x32x32 (CIFAR-10); ``transformer`` 16 tokens from a 16-symbol
    vocabulary, 4 classes; ``resnet50`` 3x224x224 (ImageNet, 1000 classes);
    ``bert-*`` ``seq_len`` tokens (default 128, the length of BERT's first pre-training
    phase, Devlin et al. 2019), with the MLM head applied to every position as
    ``BertForPreTraining`` does. C is forward + backward in FLOPs (2 per MAC).

    Why our numbers differ from :data:`~commlab.models.intensity.SURVEY_FIGURES` (we measure
    ResNet-50 960, BERT-Base 777, BERT-Large 778 against their 470, 249, 248): we count 2
    FLOPs per multiply-accumulate over forward + backward. No single convention reproduces
    all three survey figures: MACs over forward + backward give ResNet-50 480 (close to 470)
    but BERT 388, while FLOPs of the forward pass alone give BERT 259 (close to 249) but
    ResNet-50 320, so the survey seems to have taken C from different conventions or
    sequence lengths per model. BERT's intensity also grows linearly with ``seq_len`` and
    depends on whether the MLM head runs on every token or only the ~15% masked ones.
    """
    _check_name(name)
    model, x, desc = MODELS[name].standard(seq_len)
    d = count_params(model)
    c = flops_per_sample(model, x, backward=True)
    return ModelStats(name, d, c, c / d, 4 * d, desc)
