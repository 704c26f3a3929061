"""commlab.classroom.score: answers read as data and judged by the checks in this process; a
function answer judged through a sandbox, so that the reference solutions of the function
exercises earn their point (a Comm, a generator and a compressor reached through handles) while a
function that reads the check's frame, replaces the check or loops earns none."""
import json

import pytest
import torch

from commlab.classroom.score import FunctionAnswer, Unsupported, answers, decode, load_checks, score
from commlab_instructor import solution_source, variable


def _function(chapter, check, source=None):
    source = source if source is not None else solution_source(chapter, check)
    return {"__function__": f"{source}\n__answer__ = {variable(chapter, check)}\n"}


def _score(chapter, check, value, seconds=180.0, hidden=None):  # ch06's check alone takes 20 s unloaded
    ex = {"name": f"{chapter}_{check[6:]}", "chapter": chapter, "check": check, "variable": variable(chapter, check)}
    found = {ex["name"]: {"exercise": ex["name"], "value": value}}
    return score([ex], load_checks([ex]), found, seconds, hidden)[ex["name"]]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("chapter,check", [("ch00", "check_ring_sum"), ("ch02", "check_allreduce"),
                                           ("ch06", "check_unbiased"), ("ch07", "check_topk"),
                                           ("ch09", "check_choco_step")])
def test_reference_functions_earn_their_point_through_the_sandbox(chapter, check):
    assert _score(chapter, check, _function(chapter, check)) == (1.0, "correct")


FRAME_READER = '''import sys, torch
def my_topk(x, k):
    f = sys._getframe(1)
    while f is not None:
        for name in ("want", "expected"):
            if name in f.f_locals:
                return f.f_locals[name]
        f = f.f_back
    return torch.zeros_like(x)
'''
CHECK_REPLACER = '''import torch
import commlab.chapters.exercises.ch07 as m
m._trial = lambda f: None
m.check_topk = lambda fn: True
def my_topk(x, k):
    return torch.zeros_like(x)
'''


@pytest.mark.timeout(120)
def test_a_function_cannot_read_the_check_or_replace_it():
    points, message = _score("ch07", "check_topk", _function("ch07", "check_topk", FRAME_READER))
    assert points == 0.0 and "kept 0 entries, not k = 10" in message
    points, message = _score("ch07", "check_topk", _function("ch07", "check_topk", CHECK_REPLACER))
    assert points == 0.0 and "kept 0 entries" in message


@pytest.mark.timeout(120)
def test_a_function_past_its_limit_scores_nothing_and_says_so():
    loop = "def my_topk(x, k):\n    while True:\n        pass\n"
    assert _score("ch07", "check_topk", _function("ch07", "check_topk", loop), seconds=3) == \
        (0.0, "stopped after 3 s, the time limit of an exercise")


@pytest.mark.timeout(120)
def test_an_isolated_function_still_earns_its_point_and_cannot_write():
    writer = ("import commlab, os, torch\ndef my_topk(x, k):\n"
              "    open(os.path.join(os.path.dirname(commlab.__file__), 'pwned.py'), 'w')\n    return x\n")
    assert _score("ch07", "check_topk", _function("ch07", "check_topk"), hidden=[]) == (1.0, "correct")
    points, message = _score("ch07", "check_topk", _function("ch07", "check_topk", writer), hidden=[])
    assert points == 0.0 and "Read-only file system" in message


def test_numbers_are_judged_by_the_check_and_a_failed_cell_is_named():
    assert _score("ch01", "check_max_workers", 0) == (0.0, "largest N at 50% efficiency: not yet: 0 is not the expected value.")
    ex = {"name": "ch01_speedup", "chapter": "ch01", "check": "check_speedup", "variable": "answer2"}
    found = {"ch01_speedup": {"exercise": "ch01_speedup", "raised": "ZeroDivisionError: division by zero"}}
    assert score([ex], load_checks([ex]), found, 10.0)["ch01_speedup"] == \
        (0.0, "the answer cell raised ZeroDivisionError: division by zero")
    found = {"ch01_speedup": {"exercise": "ch01_speedup", "stopped": True}}
    assert score([ex], load_checks([ex]), found, 10.0)["ch01_speedup"][1].startswith("the answer cell was stopped after 10 s")
    assert score([ex], load_checks([ex]), {}, 10.0)["ch01_speedup"][1].startswith("no answer was collected")


def test_answers_decode_as_plain_data_only(tmp_path):
    t = decode({"__tensor__": [[1, 2], [3, 4]], "dtype": "float32", "shape": [2, 2]})
    assert torch.equal(t, torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert decode({"__tuple__": [1, {"__dict__": {"a": [2]}}]}) == (1, {"a": [2]})
    assert isinstance(decode({"__tensor__": [1], "dtype": "object"}), Unsupported)
    assert isinstance(decode({"__function__": "def f(): pass"}), FunctionAnswer)
    assert "cannot collect" in repr(decode({"__unsupported__": "Sneaky"}))
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join([json.dumps({"exercise": "a", "value": 1}), "not json", json.dumps([1, 2]),
                               json.dumps({"exercise": "a", "value": 2})]))
    assert answers(path) == {"a": {"exercise": "a", "value": 2}}
