"""A model and loaders that are not in the registry, written to a module ``mine_model`` in a
temporary folder that is on the path and the working folder (the fixture ``mine``), as a user's
own would be: shared by test_own_model, test_cli_profile and test_cli_train."""
import sys
import textwrap

import pytest

MODULE = '''
import torch
from torch import nn


def build():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
                         nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 4))


def build_for(dataset):
    return nn.Linear(dataset.in_features, dataset.num_classes)


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(400, 3, 8, 8, generator=g)
    return x, (x[:, 0].mean(dim=(1, 2)) > 0).long() + 2 * (x[:, 1].mean(dim=(1, 2)) > 0).long()


def torch_data():
    return torch.utils.data.TensorDataset(*data())


NOT_A_FUNCTION = 3


def raises():
    raise RuntimeError("boom in the builder")


def two_arguments(width, depth):
    return nn.Linear(width, depth)


def forty_two():
    return 42


def loader_raises():
    raise OSError("no data here")
'''


@pytest.fixture
def mine(tmp_path, monkeypatch):
    (tmp_path / "mine_model.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("mine_model", None)
