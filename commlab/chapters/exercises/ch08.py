"""Exercises of chapter 08: scheduling."""
from __future__ import annotations

from ... import schedule as sched
from ...schedule.profile import Profile
from . import check_number, say

MS, MB = 1e-3, 1_000_000

# Exercises 1 and 2: a 4-layer model (layer 0 is the input's), forward 1 ms and backward 2 ms
# per layer, gradients of 1, 4, 4 and 1 MB; one message of n MB takes 1 ms + n ms.
TOY = dict(forward_ms=(1, 1, 1, 1), backward_ms=(2, 2, 2, 2), grad_mb=(1, 4, 4, 1), alpha_ms=1.0, ms_per_mb=1.0)

# Exercise 3: which of these bucket sizes (MB) gives fusion(mb=x, first_mb=x) the shortest
# iteration of the same 4-layer model with gradients of 4 MB each and a slower start-up.
FUSION = dict(forward_ms=(1, 1, 1, 1), backward_ms=(2, 2, 2, 2), grad_mb=(4, 4, 4, 4), alpha_ms=3.0, ms_per_mb=0.5,
              candidates=(1, 4, 8, 12, 16))


def toy_profile(setting=None) -> Profile:
    """The exercises' 4-layer :class:`Profile` (default: ``TOY``) in seconds and bytes."""
    s = setting or TOY
    return Profile([f * MS for f in s["forward_ms"]], [b * MS for b in s["backward_ms"]],
                   [int(m * MB) for m in s["grad_mb"]])


def toy_comm_time(setting=None):
    """The exercises' message time: n bytes -> alpha_ms + ms_per_mb n / MB, in seconds."""
    s = setting or TOY
    return lambda n: (s["alpha_ms"] + s["ms_per_mb"] * n / MB) * MS


def iteration_ms(spec: str, setting=None) -> float:
    """Milliseconds per iteration of schedule ``spec`` on an exercise's model (the library's dispatcher)."""
    prof, ct = toy_profile(setting), toy_comm_time(setting)
    return sched.iteration(sched.get(spec).plan(prof, ct), prof, ct)[0] / MS


def mg_wfbp_messages(setting=None) -> list[list[int]]:
    """The layers of each MG-WFBP message on an exercise's model, in send order."""
    prof, ct = toy_profile(setting), toy_comm_time(setting)
    plan = sched.get("mg_wfbp").plan(prof, ct)
    return [sorted({plan.pieces[i].layer for i in b}) for b in plan.buckets]


def best_bucket_mb(setting=None) -> float:
    """The candidate bucket size with the shortest iteration (the smallest such, on a tie)."""
    s = setting or FUSION
    return min(s["candidates"], key=lambda mb: (iteration_ms(f"fusion(mb={mb}, first_mb={mb})", s), mb))


def check_wfbp_time(answer) -> bool:
    """Exercise 1: milliseconds per iteration of WFBP on the TOY model, from the start of
    backward to the end of the next forward."""
    return check_number("WFBP iteration (ms)", answer, iteration_ms("wfbp"), rel=1e-3,
                        hint="Layer 3 is ready at 2 ms, layer 2 at 4, ... A message starts when its layer is ready "
                             "and the previous message is done; the next forward (4 ms) starts after the last one.")


def check_mg_wfbp_messages(answer) -> bool:
    """Exercise 2: MG-WFBP's messages on the TOY model, as a list of lists of layers in send
    order (e.g. [[3], [2, 1], [0]])."""
    name = "MG-WFBP's messages"
    if answer is None:
        print(f"{name}: not answered yet.")
        return False
    try:
        got = [sorted(int(l) for l in g) for g in answer]
    except (TypeError, ValueError):
        print(f"{name}: expected a list of lists of layer numbers, got {answer!r}")
        return False
    want = mg_wfbp_messages()
    if got == want:
        print(f"{name}: correct ({got}).")
        return True
    hint = ("" if sorted(l for g in got for l in g) == [0, 1, 2, 3] else " Every layer 0..3 belongs to exactly one "
            "message.")
    say(f"{name}: not yet: {got} is not what the rule gives.{hint} Walk down from layer 3: merge a layer's "
        "message into the next one's when it cannot start before that layer's gradient is ready, less a = 1 ms.")
    return False


def check_best_bucket(answer) -> bool:
    """Exercise 3: the bucket size (MB), among FUSION's candidates, that minimizes the iteration."""
    return check_number("best bucket (MB)", answer, best_bucket_mb(), rel=0.0,
                        hint=f"Try each of {FUSION['candidates']} with iteration_ms('fusion(mb=x, first_mb=x)', "
                             "FUSION), or by hand.")
