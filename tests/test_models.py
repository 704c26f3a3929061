import pytest
import torch
from torch import nn

from commlab import models
from commlab.models import intensity


def test_param_counts():
    assert models.count_params(models.resnet20()) == 269_722  # "0.27M" in He et al. 2016
    assert models.count_params(models.resnet50()) == 25_557_032
    assert models.count_params(models.bottleneck_resnet((3, 4, 23, 3))) == 44_549_160  # ResNet-101, as torchvision's
    assert 109e6 < models.count_params(models.bert("base")) < 111e6
    assert 335e6 <= models.count_params(models.bert("large")) <= 337e6


def test_counting_models_live_on_meta():
    assert all(p.device.type == "meta" for p in models.resnet50().parameters())
    assert all(p.device.type == "meta" for p in models.build("bert-base").parameters())


@pytest.mark.parametrize(
    "model, x, out_shape",
    [
        (models.mlp(64, 10), torch.randn(5, 64), (5, 10)),
        (models.mlp(64, 10, hidden=(32, 16)), torch.randn(5, 1, 8, 8), (5, 10)),
        (models.small_cnn(1, 10), torch.randn(5, 1, 8, 8), (5, 10)),
        (models.resnet20(10), torch.randn(2, 3, 32, 32), (2, 10)),
        (models.resnet20(7, in_channels=1), torch.randn(2, 1, 32, 32), (2, 7)),
        (models.tiny_transformer(16, 4, seq_len=16), torch.randint(0, 16, (3, 16)), (3, 4)),
        (models.tiny_transformer(16, 4, seq_len=16), torch.randint(0, 16, (3, 9)), (3, 4)),
    ],
)
def test_forward_shapes(model, x, out_shape):
    assert model(x).shape == out_shape


@pytest.mark.parametrize("name", ["mlp", "cnn", "resnet20", "transformer"])
def test_trainable_models_get_gradients(name):
    kw = {
        "mlp": dict(in_features=64, num_classes=10),
        "cnn": dict(in_channels=1, num_classes=10),
        "resnet20": dict(num_classes=10),
        "transformer": dict(vocab_size=16, num_classes=4),
    }[name]
    x = {
        "mlp": torch.randn(4, 64),
        "cnn": torch.randn(4, 1, 8, 8),
        "resnet20": torch.randn(4, 3, 32, 32),
        "transformer": torch.randint(0, 16, (4, 16)),
    }[name]
    model = models.build(name, **kw)
    nn.functional.cross_entropy(model(x), torch.zeros(4, dtype=torch.long)).backward()
    assert all(p.grad is not None for p in model.parameters())


def test_bad_names():
    with pytest.raises(ValueError, match=r"'nope'.*resnet20.*bert-large"):
        models.build("nope")
    with pytest.raises(ValueError, match="'huge'"):
        models.bert("huge")
    with pytest.raises(ValueError, match="'vgg'"):
        models.model_intensity("vgg")


def test_model_intensity_small_models():
    s = models.model_intensity("mlp")
    assert s.params == 64 * 64 + 64 + 64 * 10 + 10
    assert s.flops_per_sample == 3 * 2 * (64 * 64 + 64 * 10)
    assert s.intensity == pytest.approx(s.flops_per_sample / s.params)
    assert s.gradient_bytes == 4 * s.params


def test_model_intensity_large_models():
    r50 = models.model_intensity("resnet50")
    assert r50.params == 25_557_032
    # 4.09 G multiply-accumulates forward -> ~24.5 GFLOPs forward + backward
    assert r50.flops_per_sample == pytest.approx(3 * 2 * 4.09e9, rel=0.02)
    large = models.model_intensity("bert-large")
    assert large.gradient_bytes == pytest.approx(1.34e9, rel=0.01)
    # C is about 6 * seq_len * D for a transformer, so the intensity is linear in seq_len
    short = models.model_intensity("bert-base", seq_len=64)
    base = models.model_intensity("bert-base")
    assert base.intensity == pytest.approx(2 * short.intensity, rel=0.05)
    assert 700 < base.intensity < 850


def test_survey_figures():
    assert set(intensity.SURVEY_FIGURES) == {"resnet50", "bert-base", "bert-large"}
    assert intensity.SURVEY_FIGURES["bert-large"]["gradient_bytes"] == pytest.approx(1.34e9, rel=0.01)
