import itertools

import numpy as np
import pytest
import torch

from commlab import data

SMALL = {"digits": {}, "mnist1d": {"num_samples": 1000}, "synthetic": {}, "tokens": {}}


@pytest.mark.parametrize("name", list(SMALL))
def test_load_shapes_and_labels(name):
    d = data.load(name, **SMALL[name])
    assert d.name == name
    assert d.x_train.shape[1:] == d.x_test.shape[1:] == d.input_shape
    assert len(d.x_train) == len(d.y_train) > len(d.x_test) == len(d.y_test) > 0
    assert d.y_train.dtype == torch.long
    assert 0 <= int(d.y_train.min()) and int(d.y_train.max()) < d.num_classes
    assert len(torch.unique(d.y_train)) == d.num_classes


@pytest.mark.parametrize("name", list(SMALL))
def test_load_deterministic(name):
    a, b = data.load(name, seed=3, **SMALL[name]), data.load(name, seed=3, **SMALL[name])
    c = data.load(name, seed=4, **SMALL[name])
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_test, b.y_test)
    assert not torch.equal(a.x_train, c.x_train)


def test_digits_scaling_and_image_option():
    flat, img = data.load("digits"), data.load("digits", image=True)
    assert flat.input_shape == (64,) and img.input_shape == (1, 8, 8)
    assert flat.x_train.min() >= 0 and flat.x_train.max() <= 1
    assert torch.equal(img.x_train.reshape(len(img.x_train), -1), flat.x_train)
    assert len(flat.x_train) + len(flat.x_test) == 1797


def test_mnist1d_leaves_global_rng_alone():
    np.random.seed(123)
    expected = np.random.rand()
    np.random.seed(123)
    data.load("mnist1d", seed=11, num_samples=200)
    assert np.random.rand() == expected


def test_tokens_label_is_majority_marker():
    d = data.load("tokens", classes=3, vocab_size=10, seq_len=12)
    counts = torch.stack([(d.x_train == c).sum(1) for c in range(3)], 1)
    assert torch.equal(counts.argmax(1), d.y_train)
    assert d.vocab_size == 10 and d.x_train.max() < 10
    assert torch.bincount(d.y_train).min() > 0.25 * len(d.y_train)  # balanced-ish


def test_unknown_dataset():
    with pytest.raises(ValueError, match=r"'cifar'.*digits.*mnist1d.*synthetic.*tokens"):
        data.load("cifar")


def _assert_partition(shards, n):
    everything = torch.cat(shards)
    assert everything.dtype == torch.long
    assert torch.equal(torch.sort(everything).values, torch.arange(n))


def test_split_iid():
    shards = data.split_iid(103, 4, seed=1)
    _assert_partition(shards, 103)
    assert {len(s) for s in shards} <= {25, 26}
    again = data.split_iid(103, 4, seed=1)
    assert all(torch.equal(a, b) for a, b in zip(shards, again))
    assert not torch.equal(shards[0], data.split_iid(103, 4, seed=2)[0])


@pytest.mark.parametrize("workers", [0, -2, 2.5])
def test_split_bad_workers(workers):
    with pytest.raises(ValueError, match=str(workers)):
        data.split_iid(10, workers)
    with pytest.raises(ValueError, match=str(workers)):
        data.split_dirichlet(torch.zeros(10, dtype=torch.long), workers, 1.0)


@pytest.mark.parametrize("alpha", [0, -1.0])
def test_split_bad_alpha(alpha):
    with pytest.raises(ValueError, match=f"alpha.*{alpha}"):
        data.split_dirichlet(torch.zeros(10, dtype=torch.long), 2, alpha)


def test_split_dirichlet_partition_and_determinism():
    labels = data.load("digits").y_train
    shards = data.split_dirichlet(labels, 7, alpha=0.3, seed=5)
    _assert_partition(shards, len(labels))
    again = data.split_dirichlet(labels, 7, alpha=0.3, seed=5)
    assert all(torch.equal(a, b) for a, b in zip(shards, again))


def test_split_dirichlet_min_size_with_tiny_alpha():
    labels = torch.arange(100) % 10
    shards = data.split_dirichlet(labels, 10, alpha=1e-3, seed=0, min_size=3)
    _assert_partition(shards, 100)
    assert min(len(s) for s in shards) >= 3


def _mean_total_variation(labels, shards, classes):
    hist = data.label_histogram(labels, shards, classes).double()
    per_worker = hist / hist.sum(1, keepdim=True)
    overall = torch.bincount(labels, minlength=classes).double() / len(labels)
    return 0.5 * (per_worker - overall).abs().sum(1).mean().item()


def test_dirichlet_alpha_controls_skew():
    labels = torch.arange(10_000) % 10

    def tv(alpha):
        return [_mean_total_variation(labels, data.split_dirichlet(labels, 5, alpha, seed=s), 10) for s in range(3)]

    iid, skew = tv(1000.0), tv(0.05)
    random = [_mean_total_variation(labels, data.split_iid(10_000, 5, seed=s), 10) for s in range(3)]
    assert max(iid) < 0.05 and max(random) < 0.05
    assert min(skew) > 0.5


def test_label_histogram():
    labels = torch.tensor([0, 1, 1, 2, 2, 2])
    hist = data.label_histogram(labels, [torch.tensor([0, 3]), torch.tensor([1, 2, 4, 5])], 4)
    assert hist.tolist() == [[1, 0, 1, 0], [0, 2, 2, 0]]


def test_batches():
    x = torch.arange(50).float().unsqueeze(1)
    y = torch.arange(50)
    shard = torch.arange(10, 33)  # 23 samples
    first = list(itertools.islice(data.batches(x, y, shard, 5, seed=2), 10))
    second = list(itertools.islice(data.batches(x, y, shard, 5, seed=2), 10))
    other = list(itertools.islice(data.batches(x, y, shard, 5, seed=3), 10))
    assert all(torch.equal(a[1], b[1]) for a, b in zip(first, second))
    assert not all(torch.equal(a[1], b[1]) for a, b in zip(first, other))
    assert [len(b[1]) for b in first] == [5, 5, 5, 5, 3] * 2
    epoch0, epoch1 = torch.cat([b[1] for b in first[:5]]), torch.cat([b[1] for b in first[5:]])
    assert torch.equal(epoch0.sort().values, shard) and torch.equal(epoch1.sort().values, shard)
    assert not torch.equal(epoch0, epoch1)  # reshuffled each epoch
    assert all(torch.equal(bx.squeeze(1).long(), by) for bx, by in first)


def test_batches_drop_last_and_errors():
    x, y = torch.randn(20, 2), torch.arange(20)
    sizes = [len(b[1]) for b in itertools.islice(data.batches(x, y, torch.arange(7), 3, drop_last=True), 4)]
    assert sizes == [3, 3, 3, 3]
    with pytest.raises(ValueError, match="batch_size"):
        data.batches(x, y, torch.arange(7), 0)
    with pytest.raises(ValueError, match="empty"):
        data.batches(x, y, torch.arange(0), 3)


def test_from_tensors_makes_a_dataset_of_your_own_samples():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(50, 3, 4, generator=g), torch.arange(50) % 3
    d = data.from_tensors(x, y, name="mine", seed=1)
    assert (d.name, d.num_classes, d.input_shape, d.vocab_size) == ("mine", 3, (3, 4), None)
    assert len(d.x_train) == 40 and len(d.x_test) == 10
    together = torch.cat([d.x_train, d.x_test])
    assert sorted(together.sum(dim=(1, 2)).tolist()) == sorted(x.sum(dim=(1, 2)).tolist())  # a split, nothing lost
    assert torch.equal(data.from_tensors(x, y, seed=1).x_train, d.x_train)
    tokens = data.from_tensors(torch.randint(0, 7, (20, 5), generator=g), torch.arange(20) % 2)
    assert tokens.vocab_size == int(torch.cat([tokens.x_train, tokens.x_test]).max()) + 1
    assert tokens.x_train.dtype == torch.long


def test_from_torch_reads_a_torch_dataset_whole():
    from torch.utils.data import TensorDataset

    x, y = torch.randn(30, 6), torch.arange(30) % 5
    d = data.from_torch(TensorDataset(x, y), seed=2)
    e = data.from_tensors(x, y, seed=2)
    assert torch.equal(d.x_train, e.x_train) and torch.equal(d.y_test, e.y_test) and d.num_classes == 5


@pytest.mark.parametrize("x, y, message", [
    (torch.randn(10), torch.zeros(10, dtype=torch.long), "x must be"),
    (torch.randn(10, 2), torch.zeros(9, dtype=torch.long), "the same samples"),
    (torch.randn(10, 2), torch.rand(10), "class labels"),
    (torch.randn(10, 2), -torch.ones(10, dtype=torch.long), "class labels"),
])
def test_from_tensors_refuses_what_is_not_samples_and_labels(x, y, message):
    with pytest.raises(ValueError, match=message):
        data.from_tensors(x, y)
    with pytest.raises(ValueError, match="expected a torch.utils.data.Dataset"):
        data.from_torch(42)
