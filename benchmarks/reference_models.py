"""The book's two reference models on a real device, as builders for the command line:

    python -m commlab profile --model benchmarks.reference_models:resnet50 --input 3x224x224 --device cuda ...
    python -m commlab profile --model benchmarks.reference_models:bert_base --input 128 --vocab 30522 ...

(the registry builds them on the meta device, for counting only; weights here are random).
"""
from commlab import models


def resnet50():
    """ResNet-50 for 224x224 images, 1000 classes (25.6M parameters)."""
    return models.resnet50(device="cpu")


def bert_base():
    """BERT-Base for pre-training (110.1M parameters), random weights."""
    return models.bert("base", device="cpu")
