"""commlab.sim.to_device: a measured profile's operators put on another device by a roofline,
each the larger of its FLOPs at the data sheet's rate, its bytes at the streaming bandwidth and
one launch; mapped profiles say where their seconds come from; bad input is refused."""
import pytest

from commlab.schedule.profile import Profile
from commlab.sim import DEVICES, describe, to_device
from commlab.sim.op_trace import CONV, MATMUL, OTHER


def _profile(forward, backward):
    return Profile([1.0] * len(forward), [1.0] * len(forward), [4] * len(forward), names=[f"l{i}" for i in range(len(forward))],
                   about={"device": "cpu (1 thread)", "measured": "thread CPU time per layer",
                          "ops": {"forward": forward, "backward": backward}})


def test_each_operator_takes_its_roofline():
    v100 = DEVICES["v100"]
    forward = [[(15.7e12, 0.0, MATMUL), (0.0, 0.85 * 900e9, OTHER)], [(1.0, 1.0, OTHER)]]
    backward = [[(2 * 15.7e12, 0.0, CONV)], [(0.0, 0.0, OTHER), (0.0, 0.0, OTHER)]]
    mapped = to_device(_profile(forward, backward), "v100")
    assert mapped.forward_s == pytest.approx((1.0 + 1.0, v100.launch))
    assert mapped.backward_s == pytest.approx((2.0, 2 * v100.launch))
    assert mapped.device is v100 and mapped.grad_bytes == (4, 4)


def test_convolutions_and_other_products_run_at_their_own_rates_on_ampere_and_later():
    ops = [[(494.7e12, 0.0, CONV), (66.9e12, 0.0, MATMUL)]]
    assert to_device(_profile(ops, [[]]), "h200").forward_s == pytest.approx((2.0,))


def test_a_mapped_profile_says_where_its_seconds_come_from():
    p = _profile([[(1.0, 1.0, OTHER)]], [[]])
    assert describe(p) == "measured on cpu (1 thread) (thread CPU time per layer)"
    said = describe(to_device(p, "a100"))
    assert said.startswith("measured on cpu (1 thread), mapped to a100 by a roofline per operator: "
                           "convolutions at 156 TFLOP/s, other matrix products at 19.5 TFLOP/s")
    assert "a floor" in said


def test_bad_input_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="has no 'ops'"):
        to_device(Profile([1.0], [1.0], [4]), "v100")
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        to_device(_profile([[]], [[]]), "tpu")
