"""Config: the Trainer's options, checked on construction with errors naming option, value and range."""
import dataclasses
import math
import re

import numpy as np
import pytest

from commlab import data
from commlab.config import RULES, Config
from commlab.runtime import RUNTIMES

FIELDS = ["model", "data", "workers", "sync", "arch", "compress", "reply_compress", "compress_per", "schedule", "parallel",
          "runtime", "seed",
          "batch_size", "lr", "momentum", "weight_decay", "split", "dirichlet_alpha", "eval_every", "progress",
          "timeout", "data_kw", "model_kw"]
DEFAULTS = dict(model="mlp", data="digits", workers=4, sync="bsp", arch="native", compress=None, reply_compress=None,
                compress_per="bucket", schedule=None, parallel=None, runtime="threads", seed=0, batch_size=32, lr=0.1, momentum=0.0, weight_decay=0.0,
                split="iid", dirichlet_alpha=1.0, eval_every=10, progress=True, timeout=120.0, data_kw={}, model_kw={})


def test_fields_and_defaults_are_the_trainers():
    assert dataclasses.is_dataclass(Config)
    assert [f.name for f in dataclasses.fields(Config)] == FIELDS
    assert dataclasses.asdict(Config()) == DEFAULTS
    assert Config().data_kw is not Config().data_kw  # a fresh dict each time


def test_every_checked_field_has_a_rule_and_the_dimensions_have_none():
    assert set(RULES) == set(FIELDS) - {"sync", "arch", "compress", "reply_compress", "schedule", "parallel"}
    # the dimensions' strings are left to their registries
    Config(sync="no_such_sync", arch="no_such_arch", compress="no_such(1)")


@pytest.mark.parametrize("kw", [
    dict(workers=1), dict(workers=np.int64(3)), dict(batch_size=1), dict(lr=1), dict(lr=1e-9),
    dict(momentum=0), dict(momentum=0.999), dict(weight_decay=0), dict(weight_decay=5e-4), dict(eval_every=1),
    dict(timeout=0.01), dict(timeout=5), dict(seed=-3), dict(seed=np.int32(2)), dict(split="dirichlet"),
    dict(dirichlet_alpha=0.01), dict(progress=False), dict(data_kw={"image": True}), dict(model_kw={"hidden": [8]}),
    dict(model=lambda ds: None), dict(model="cnn"), dict(lr=np.float32(0.5)), dict(compress_per="bucket"),
    dict(compress_per="tensor"),
] + [dict(runtime=r) for r in RUNTIMES])
def test_valid_values_pass(kw):
    c = Config(**kw)
    for k, v in kw.items():
        assert getattr(c, k) is v


def test_a_dataset_object_passes():
    ds = data.load("synthetic", seed=0, n=100)
    assert Config(data=ds).data is ds


def bad(option, value, valid, kind=None):
    """pytest.raises for the message naming the option, the value (its repr) and what is valid:
    a TypeError for what is not a number at all (a bool, a string, None), else a ValueError."""
    if kind is None:
        kind = TypeError if isinstance(value, (bool, str, type(None))) else ValueError
    what = "is out of range" if kind is ValueError else "has the wrong type"
    return pytest.raises(kind, match=rf"^Trainer option {option}={re.escape(repr(value))} {what}; valid: {valid}")


INT_OPTIONS = ["workers", "batch_size", "eval_every"]
BAD_POSITIVE_INT = [0, -1, 2.5, 2.0, True, False, "4", None, float("nan")]


@pytest.mark.parametrize("option", INT_OPTIONS)
@pytest.mark.parametrize("value", BAD_POSITIVE_INT, ids=repr)
def test_positive_integers(option, value):
    with bad(option, value, "an integer >= 1$"):
        Config(**{option: value})


@pytest.mark.parametrize("value", [1.5, True, "0", None], ids=repr)
def test_seed_is_an_integer(value):
    with bad("seed", value, "an integer$"):
        Config(seed=value)


POSITIVE = ["lr", "timeout", "dirichlet_alpha"]


@pytest.mark.parametrize("option", POSITIVE)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1, 0, 0.0, True, "0.1", None], ids=repr)
def test_finite_positive_numbers(option, value):
    with bad(option, value, "a finite number > 0$"):
        Config(**{option: value})


@pytest.mark.parametrize("value", [1, 1.0, 1.5, -0.1, math.nan, math.inf, True, "0.9"], ids=repr)
def test_momentum_in_unit_interval(value):
    with bad("momentum", value, r"a finite number in \[0, 1\)$"):
        Config(momentum=value)


@pytest.mark.parametrize("value", [-1e-4, math.nan, math.inf, False, None], ids=repr)
def test_weight_decay_non_negative(value):
    with bad("weight_decay", value, "a finite number >= 0$"):
        Config(weight_decay=value)


@pytest.mark.parametrize("value", ["IID", "non_iid", "", None, 1])
def test_split_choices(value):
    with pytest.raises(ValueError, match=rf"^Trainer option split={re.escape(repr(value))} is not known; "
                                         r"valid: iid, dirichlet$"):
        Config(split=value)


@pytest.mark.parametrize("value", ["layer", "Tensor", "buckets", "", None, 1, ["tensor"]])
def test_compress_per_choices(value):
    with pytest.raises(ValueError, match=rf"^Trainer option compress_per={re.escape(repr(value))} is not known; "
                                         r"valid: bucket, tensor$"):
        Config(compress_per=value)


@pytest.mark.parametrize("value", ["mpi", "Gloo", "", None, ["gloo"]])
def test_runtime_choices(value):
    with pytest.raises(ValueError, match=rf"^Trainer option runtime={re.escape(repr(value))} is not known; "
                                         r"valid runtimes: threads, gloo, nccl$"):
        Config(runtime=value)


def test_torchrun_is_not_a_runtime_but_says_how_to_use_it():
    with pytest.raises(ValueError, match=r"runtime='torchrun' is not known; valid runtimes: threads, gloo, nccl; "
                                         r"under torchrun pass runtime='gloo' or 'nccl' and launch the script "
                                         r"with torchrun"):
        Config(runtime="torchrun")


@pytest.mark.parametrize("value", [1, 0, "yes", None])
def test_progress_is_a_bool(value):
    with bad("progress", value, "True or False$", TypeError):
        Config(progress=value)


@pytest.mark.parametrize("option", ["data_kw", "model_kw"])
@pytest.mark.parametrize("value", [None, [], "image=True", (("image", True),)], ids=repr)
def test_keyword_dicts(option, value):
    with bad(option, value, "a dict of keyword arguments", TypeError):
        Config(**{option: value})


@pytest.mark.parametrize("value", [None, 3, "", ["mlp"]], ids=repr)
def test_model_is_a_name_or_a_callable(value):
    with bad("model", value, "a model name such as 'mlp', or a function dataset -> nn.Module$", TypeError):
        Config(model=value)


@pytest.mark.parametrize("value", [None, 3, "", {"x": 1}], ids=repr)
def test_data_is_a_name_or_a_dataset(value):
    with bad("data", value, r"a data set name such as 'digits', or a commlab\.data\.Dataset$", TypeError):
        Config(data=value)


def test_check_again_after_a_change():
    c = Config()
    c.lr = -1.0
    with bad("lr", -1.0, "a finite number > 0"):
        c.check()
    c.lr = 0.5
    assert c.check() is c


def test_the_first_bad_field_in_field_order_is_named():
    with bad("workers", 0, "an integer >= 1"):
        Config(workers=0, lr=-1)
