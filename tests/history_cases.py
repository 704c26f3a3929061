"""Two dozen representative runs whose Histories must not change when the code is reorganised.

``tests/data/histories.json`` holds the deterministic columns of each run (as first recorded
before the layering move of issue 8) and the machine that recorded them;
``tests/test_histories.py`` runs them again and compares:

* exactly, what no CPU can change: bytes, messages, samples, staleness, drops, the simulated
  times (sums of closed forms in Python floats) and the server's log;
* within :data:`TOLERANCE`, the columns computed by float32 kernels (losses, accuracy,
  consensus). Their bits depend on the CPU's kernels (ATen's AVX2, AVX-512 and default code
  paths, MKL's), so a record made on one machine is compared with a tolerance on another.

Bit for bit is still the oracle of a refactoring, on one machine: take a snapshot before the
change and the suite compares every column bit for bit against it (the snapshot lies beside
the record, is never committed, and is only used on the machine, torch and kernels that made it):

    python tests/history_cases.py --snapshot   # before a refactor: this machine's exact bits
    python tests/history_cases.py --write      # a change meant to change results: the record
"""
from __future__ import annotations

import json
import math
import os
import pathlib
import sys

FILE = pathlib.Path(__file__).parent / "data" / "histories.json"
SNAPSHOT = FILE.with_name("histories.local.json")  # this machine's bits (git-ignored)
STEPS = 12

# Float columns: (relative, absolute) tolerance against a record made on another machine.
# float32 rounds at u = 2^-24 = 6e-8 relative; a reduction's order (the kernels' vector width)
# moves a result by a few u, and 12 steps of SGD carry that forward: across the AVX2, AVX-512
# and default kernels the losses differ by at most 1.0e-7 relative and the consensus distances
# by 4.5e-7 (a mean of squared differences of nearly equal models, which cancels digits).
# 1e-5 (about 170 u) and 1e-4 for the consensus leave a wide margin and still catch any change
# of the math (one different step moves a loss by 1e-3 or more). An accuracy counts test samples:
# one sample in 359 may flip where two logits tie to within the rounding.
TOLERANCE = {"loss": (1e-5, 0.0), "test_loss": (1e-5, 0.0), "consensus": (1e-4, 1e-12),
             "test_accuracy": (0.0, 1.01 / 359)}

# name -> Trainer keywords; every sync mode, PS and all-reduce, several compressors, Gloo and threads.
# Hogwild is left out: its threads race on shared memory by design, so no two runs are equal.
CASES = {
    "bsp_native": dict(sync="bsp", arch="native"),
    "bsp_ring_gloo": dict(sync="bsp", arch="ring", runtime="gloo", workers=2),
    "bsp_tree_qsgd": dict(sync="bsp", arch="tree", compress="qsgd(levels=16)"),
    "bsp_ring_topk_ef": dict(sync="bsp", arch="ring", compress="topk(0.05)+ef"),
    "bsp_powersgd": dict(sync="bsp", arch="halving_doubling", compress="powersgd(rank=2)"),
    "bsp_gtopk": dict(sync="bsp", arch="native", compress="gtopk(0.05)"),
    "bsp_terngrad": dict(sync="bsp", arch="ring", compress="terngrad"),
    "bsp_signsgd": dict(sync="bsp", arch="native", compress="signsgd"),
    "bsp_randk": dict(sync="bsp", arch="ring", compress="randk(0.1)"),
    "bsp_hier_momentum": dict(sync="bsp", arch="hierarchical(group_size=2)", momentum=0.9),
    "bsp_ps_shards": dict(sync="bsp", arch="ps(shards=2)"),
    "bsp_ps_colocated": dict(sync="bsp", arch="ps(shards=2, colocated=True)"),
    "bsp_ps_double": dict(sync="bsp", arch="ps", compress="qsgd(levels=64)", reply_compress="topk(0.2)"),
    "bsp_ps_gloo": dict(sync="bsp", arch="ps(shards=2)", runtime="gloo", workers=2),
    "asp": dict(sync="asp"),
    "ssp": dict(sync="ssp(staleness=1)"),
    "backup": dict(sync="backup(backups=1)"),
    "round_robin": dict(sync="round_robin", arch="ps(shards=2)"),
    "local_sgd_qsgd": dict(sync="local_sgd(period=3)", compress="qsgd(levels=16)"),
    "post_local_sgd": dict(sync="post_local_sgd(switch=4, period=2)"),
    "fedavg_dirichlet": dict(sync="fedavg(fraction=0.5, local_steps=2)", split="dirichlet", dirichlet_alpha=0.5),
    "dynamic_batch": dict(sync="dynamic_batch(growth=1.2)"),
    "dpsgd_torus": dict(sync="dpsgd", arch="gossip(topology='torus')"),
    "choco_topk_ring": dict(sync="choco(gamma=0.5)", compress="topk(0.1)"),
    "dcd_qsgd_gloo": dict(sync="dcd_psgd", compress="qsgd(levels=15)", runtime="gloo", workers=2),
    "adpsgd_ring": dict(sync="adpsgd"),
}


def run(name: str) -> dict:
    """The deterministic columns of one case's History (NaN as None: JSON has no NaN), with one
    intra-op thread: torch's parallel kernels sum in an order that depends on the thread count."""
    import torch

    from commlab import Network, Trainer
    from commlab.history import DETERMINISTIC

    kw = dict(model="mlp", data="digits", workers=4, net=Network("10GbE", slowdown={1: 2.0}), seed=3,
              progress=False, eval_every=4, lr=0.05)
    kw.update(CASES[name])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        h = Trainer(**kw).fit(STEPS)
    finally:
        torch.set_num_threads(threads)
    return {col: _plain(getattr(h, col)) for col in DETERMINISTIC}


def machine() -> dict:
    """What decides the float bits of a run: torch, the CPU kernels it chose, the platform."""
    import platform

    import torch

    return {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "mkl_cbwr": os.environ.get("MKL_CBWR", ""), "machine": platform.machine(),
            "python": platform.python_version()}


def load(path: pathlib.Path = FILE) -> tuple[dict, dict]:
    """(machine, {case: columns}) of a record or a snapshot."""
    data = json.loads(path.read_text())
    return data["machine"], data["cases"]


def differences(name: str, now: dict, was: dict, exact: bool = False) -> list[str]:
    """What differs between a case's columns ``now`` and as recorded (``was``): every column
    that is not equal, bit for bit when ``exact`` or for the exact columns, else beyond
    :data:`TOLERANCE`; [] when they agree."""
    out = []
    for col, old in was.items():
        new = now[col]
        if new == old:
            continue
        if exact or col not in TOLERANCE:
            out.append(f"{name}: column {col!r} changed (compared exactly)")
            continue
        rel, tol = TOLERANCE[col]
        new, old = _leaves(new), _leaves(old)
        if len(new) != len(old):
            out.append(f"{name}: column {col!r} changed length")
            continue
        worst = max(zip(new, old), key=lambda p: _excess(p, rel, tol))
        if _excess(worst, rel, tol) > 0:
            out.append(f"{name}: column {col!r}: {worst[0]!r} now, {worst[1]!r} recorded "
                       f"(tolerance {rel:g} relative, {tol:g} absolute)")
    return out


def _leaves(v) -> list:
    return [x for item in v for x in _leaves(item)] if isinstance(v, list) else [v]


def _excess(pair, rel, tol) -> float:
    a, b = pair
    if a is None or b is None:
        return 0.0 if a is b else math.inf
    return abs(a - b) - (tol + rel * abs(b))


def _write(path: pathlib.Path, what: str) -> None:
    cases = {name: run(name) for name in CASES}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"machine": machine(), "cases": cases}, indent=0, sort_keys=True) + "\n")
    tmp.replace(path)  # never half written
    print(f"wrote {path}: {what} of {len(cases)} runs on {machine()}")


def _plain(v):
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


if __name__ == "__main__":
    commands = {"--write": (FILE, "the record"), "--snapshot": (SNAPSHOT, "this machine's bits")}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit("usage: python tests/history_cases.py --write | --snapshot\n"
                 "  --write     records tests/data/histories.json (a change meant to change results)\n"
                 "  --snapshot  records this machine's bits in tests/data/histories.local.json, which the\n"
                 "              suite then compares bit for bit (before a refactor)")
    _write(*commands[sys.argv[1]])
