"""Scheduling on Gloo: every schedule's step time beside PyTorch DDP.

    python benchmarks/bench_schedule.py                 # 2-3 minutes on 2 cores
    python benchmarks/bench_schedule.py --steps 40      # steadier medians
    python benchmarks/bench_schedule.py --hidden 1024   # more bytes per layer

(a) 4 Gloo ranks (``Trainer(runtime="gloo")``) train an MLP of 21 Linear layers
    (``hidden=[512] * 20``: 5.0 M parameters, 20 MB of gradients) on digits, 32 samples per
    rank and step, plain SGD, with every schedule of :mod:`commlab.schedule` over the native
    all-reduce, and beside them torch's ``DistributedDataParallel`` over the same Gloo group
    (same model, seed, batches and optimizer; its loop written out in :func:`ddp_rank`,
    launched the same way). Step time: the median wall seconds per step, slowest rank, after
    a warm-up; every configuration runs once per round and its best round counts (a shared
    machine's load comes and goes). Target: our best schedule <= 1.1x DDP.

    The run's network model is measured, not assumed: ``commlab.net.calibrate`` fits alpha and
    beta by ping-pong between Gloo ranks, and the compute rate is the model's training FLOPs
    over the measured forward + backward seconds while 4 ranks share the cores
    (:func:`commlab.measure.bench.compute_seconds`). Both go into ``net=``, so MG-WFBP's merge rule and
    the search compare the real start-up cost with the real backward seconds per layer. The
    column "sim" is the step the simulated clock predicts from them.

    What a message costs on Gloo here: a native all-reduce of a few bytes takes milliseconds
    (printed first), and commlab's Gloo runtime adds a small all-reduce per collective that
    checks every rank's shape agrees, and, with a clock (``net=``), one that takes the maximum
    of the ranks' clocks. So a message costs commlab about 2-3 Gloo all-reduces and DDP one:
    schedules of many small messages (WFBP, P3) lose here, and the best schedule is the one
    with the fewest messages that still overlaps backward. Ping-pong between two ranks also
    sees neither those extra all-reduces nor 4 ranks sharing 2 cores, so the calibrated model
    ("sim") underestimates a message, and the search, which trusts it, may pick a plan of
    more messages than pays off here.

(b) Simulated clusters: ``benchmarks/bench_sim.py``.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import torch
import torch.nn.functional as F

from commlab import data
from commlab.measure.bench import allreduce_seconds, calibrated_link, compute_seconds, table
from commlab.models.intensity import flops_per_sample
from commlab.models import build_model
from commlab.net import cost
from commlab.net.clock import Network
from commlab.runtime import launch
from commlab.schedule import Schedule
from commlab.train import Trainer

WORKERS, BATCH, LR, SEED = 4, 32, 0.05, 0
SCHEDULES = [None, "wfbp", "fusion", "fusion(mb=5, first_mb=1)", "mg_wfbp", "bytescheduler", "p3", "search"]


def ddp_rank(comm, hidden, steps):
    """torch DDP's loop on this rank (Gloo's process group is the default group), same model,
    seed, data shard, batches and optimizer as ``Trainer``; wall seconds of each step."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    ds = data.load("digits", seed=SEED)
    torch.manual_seed(SEED)
    model = DDP(build_model("mlp", ds, hidden=hidden))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    shard = data.split_iid(len(ds.y_train), WORKERS, SEED)[comm.rank]
    batches = data.batches(ds.x_train, ds.y_train, shard, BATCH, seed=SEED + comm.rank)
    stamps = [time.perf_counter()]
    for _ in range(steps):
        x, y = next(batches)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=False)
        loss.backward()
        optimizer.step()
        loss.item()
        stamps.append(time.perf_counter())
    return [b - a for a, b in zip(stamps, stamps[1:])]


def ddp_steps(hidden, steps, warmup):
    """Wall seconds of DDP's steps after the warm-up (slowest rank per step)."""
    per_rank = launch(ddp_rank, WORKERS, runtime="gloo", args=(hidden, steps), timeout=600)
    return [max(r[i] for r in per_rank) for i in range(steps)][warmup:]


def ddp_buckets(model) -> int:
    """How many buckets DDP makes of this model (its defaults: 1 MiB first, then 25 MiB)."""
    params = [p for p in model.parameters() if p.requires_grad][::-1]  # DDP fills them in reverse
    buckets, _ = torch.distributed._compute_bucket_assignment_by_size(params, [1 << 20, 25 << 20])
    return len(buckets)


class Fixed(Schedule):
    """A plan made elsewhere (under the calibrated network), replayed by a run without a clock."""

    name = "fixed"

    def __init__(self, plan):
        self.fixed = plan

    def plan(self, profile, comm_time=None):
        return self.fixed


def ours(spec, hidden, net, steps, warmup):
    """(messages per step, wall seconds of the steps after the warm-up, simulated seconds per
    step, the plan) of one Trainer run on Gloo."""
    tr = Trainer(model="mlp", data="digits", workers=WORKERS, arch="native", runtime="gloo", net=net, schedule=spec,
                 batch_size=BATCH, lr=LR, seed=SEED, eval_every=10**9, progress=False, timeout=600,
                 model_kw={"hidden": hidden})
    h = tr.fit(steps)
    wall = [b - a for a, b in zip([0.0] + h.wall_time, h.wall_time)][warmup:-1]  # the last step evaluates
    sim = [b - a for a, b in zip(h.sim_time, h.sim_time[1:])][1:] if net is not None else [math.nan]
    return (len(tr.schedule.messages) if tr.schedule else 1), wall, statistics.median(sim), tr.schedule and tr.schedule.plan




def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=16, help="steps per run (schedules of many messages run a quarter)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--layers", type=int, default=20, help="hidden layers (parameter layers: one more)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    hidden = [args.hidden] * args.layers
    ds = data.load("digits", seed=SEED)
    model = build_model("mlp", ds, hidden=hidden)
    params = sum(p.numel() for p in model.parameters())
    nbytes = 4 * params

    load = os.getloadavg()[0]
    link = calibrated_link(WORKERS)
    if link.beta == 0 or load > (os.cpu_count() or 1) / 2:
        print(f"warning: load average {load:.1f} on {os.cpu_count()} cores before the run, calibrated {link}: other "
              "work shares this machine, so the times below are noisy; run it again on a quiet one")
    step_compute = compute_seconds(WORKERS, "mlp", ds, BATCH, model_kw={"hidden": hidden})
    rate = flops_per_sample(model, ds.x_train[:1]) * BATCH / step_compute
    net = Network(link, flops=rate)
    tiny, full = allreduce_seconds(WORKERS, 1), allreduce_seconds(WORKERS, params)
    print(f"model: mlp hidden={args.hidden}x{args.layers}, {args.layers + 1} layers, {params / 1e6:.2f} M parameters, "
          f"{nbytes / 1e6:.1f} MB of gradients; {WORKERS} Gloo ranks, batch {BATCH} per rank")
    print(f"calibrated link (ping-pong): {link}; compute: {step_compute * 1e3:.1f} ms forward + backward per step "
          f"({rate / 1e9:.1f} GFLOP/s per rank)")
    print(f"commlab native all-reduce (with its shape check), measured: 4 B {tiny * 1e3:.2f} ms, "
          f"{nbytes / 1e6:.1f} MB {full * 1e3:.1f} ms; the calibrated model says "
          f"{cost.native('all_reduce', 4, WORKERS, link) * 1e3:.2f} ms and "
          f"{cost.native('all_reduce', nbytes, WORKERS, link) * 1e3:.1f} ms")

    # rounds: every configuration once per round, so the load of a shared machine falls on all alike;
    # each configuration's time is the median of its steps in a round, its best round counts
    start = time.perf_counter()
    walls, info, plans = {}, {}, {}
    for _ in range(args.rounds):
        walls.setdefault("ddp", []).append(statistics.median(ddp_steps(hidden, args.steps, args.warmup)))
        for spec in SCHEDULES:
            few = spec in ("wfbp", "p3")  # one message per layer or per slice: slow steps, fewer of them
            steps = max(args.warmup + 3, args.steps // 4) if few else args.steps
            messages, wall, sim, plans[spec] = ours(spec, hidden, net, steps, args.warmup)
            walls.setdefault(spec, []).append(statistics.median(wall))
            info[spec] = (messages, sim)
            if not few and (plans[spec] is None or plans[spec].buckets is not None):
                # the same plan with net=None: no simulated clock, so no all-reduce of the clocks per message
                _, wall, _, _ = ours(plans[spec] and Fixed(plans[spec]), hidden, None, steps, args.warmup)
                walls.setdefault((spec, "bare"), []).append(statistics.median(wall))
    ref = min(walls["ddp"])
    rows, ratio = [], {}
    for spec in SCHEDULES:
        wall = min(walls[spec])
        ratio[spec] = wall / ref
        bare = min(walls[(spec, "bare")]) if (spec, "bare") in walls else math.nan
        rows.append([spec or "none (one message)", info[spec][0], f"{wall:.4f}", f"{wall / ref:.2f}",
                     f"{info[spec][1]:.4f}", "-" if bare != bare else f"{bare:.4f}",
                     "-" if bare != bare else f"{bare / ref:.2f}"])
    rows.append(["torch DDP", ddp_buckets(model), f"{ref:.4f}", "1.00", "-", "-", "-"])
    table(f"(a) step time on Gloo, {WORKERS} ranks: median wall seconds per step (slowest rank), best of "
          f"{args.rounds} rounds; sim: the simulated clock's step; no clock: the same plan with net=None",
          ["schedule", "messages/step", "step s", "/ DDP", "sim s", "no clock s", "/ DDP"], rows)
    best = min((s for s in SCHEDULES if s is not None), key=ratio.get)
    print(f"\nbest schedule: {best} at {ratio[best]:.2f}x DDP (target <= 1.1x); benchmark took "
          f"{time.perf_counter() - start:.0f} s; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after")

if __name__ == "__main__":
    main()
