"""commlab.classroom.collect: answers written down as plain data, and a function as source that
runs on its own: with the imports, helpers and constants it reads from the notebook."""
import json
import math

import numpy as np
import torch

from commlab.classroom.collect import function_source, plain
from commlab.classroom.score import FunctionAnswer, decode

SCALE = 2.5


def _helper(x):
    return x * SCALE


def answer_fn(x):
    return torch.as_tensor(_helper(x)) + math.sqrt(4)


OPAQUE = object()


def uses_opaque(x):
    return OPAQUE


def test_plain_data_round_trips_through_json():
    value = {"n": 3, "t": torch.arange(6.0).reshape(2, 3), "a": np.array([1, 2], dtype=np.int64),
             "pair": (np.float64(0.5), None), "s": "x", "nan": float("nan")}
    back = decode(json.loads(json.dumps(plain(value))))
    assert back["n"] == 3 and back["s"] == "x" and back["pair"] == (0.5, None)
    assert torch.equal(back["t"], torch.arange(6.0).reshape(2, 3)) and back["t"].dtype == torch.float32
    assert torch.equal(back["a"], torch.tensor([1, 2])) and math.isnan(back["nan"])


def test_an_object_is_a_float_if_it_has_one_else_unsupported():
    class Half:
        def __float__(self):
            return 0.5
    assert plain(Half()) == 0.5
    assert plain(object()) == {"__unsupported__": "object"}
    assert plain(torch.zeros(2_000_000)) == {"__unsupported__": "a tensor of 2,000,000 values (at most 1,000,000)"}


def test_a_function_is_its_source_with_what_it_uses():
    source = function_source(answer_fn, globals())
    assert "import math" in source and "import torch" in source and "SCALE = 2.5" in source
    assert "def _helper(x):" in source and source.rstrip().endswith("__answer__ = answer_fn")
    namespace = {}
    exec(source, namespace)  # here only to test the source: grading runs it in a sandbox
    assert float(namespace["__answer__"](2.0)) == 7.0
    assert isinstance(decode(plain(answer_fn, globals())), FunctionAnswer)


def test_a_lambda_is_assigned_and_an_unknown_name_is_said():
    square = lambda x: x * x  # noqa: E731 - a lambda answer, as a student may write one
    namespace = {}
    exec(function_source(square, {}), namespace)
    assert namespace["__answer__"](3) == 9
    assert function_source(uses_opaque, {"OPAQUE": OPAQUE}).startswith("# not collected from the notebook: OPAQUE (object)")
