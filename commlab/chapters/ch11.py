"""Chapter 11, infrastructure and clusters: the runs, tables, figures and widget the notebook shows.

Every function asks the library (:mod:`commlab.sim` for fabrics, flows, protocols and in-network
aggregation's closed form; :mod:`commlab.infra` for the switch rank, jobs, inference and faults)
or runs it (the switch rank and the elastic run); nothing here is a result typed in.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ..arch import ring
from ..infra import elastic, faults, inference, jobs, placement
from ..arch.switch import InNetwork, switch_allreduce
from ..runtime import launch
from ..sim import Cluster, iteration
from ..sim import fabric_sync as fs
from ..sim.devices import builtin
from ..sim.fabric import bcube, fat_tree
from ..sim.flows import ring_allreduce
from ..sim.gpu_fabric import build, gpu_cluster, switch_count
from ..arch.innetwork import ina_speedup
from ..net.link import get_link as link
from ..net.protocols import PROTOCOLS
from ..train import Trainer
from . import explorer

MB = 1e6


# ----------------------------------------------------------------------------- fabrics
def oversubscription_table(k: int = 8, nbytes: float = 100 * MB, ratios=(1, 2, 4)) -> pd.DataFrame:
    """A ring all-reduce through all k^3/4 hosts of a fat-tree, and one inside a rack, against
    the closed form, as the top of rack is oversubscribed."""
    rows = {}
    for r in ratios:
        f = fat_tree(k, "100GbIB", oversubscription=r)
        closed = ring.cost(nbytes, len(f.hosts), link("100GbIB"))
        rack = list(range(k // 2))
        rows[f"{r}:1"] = {"whole cluster ms": 1e3 * ring_allreduce(f, nbytes), "vs closed form": ring_allreduce(f, nbytes) / closed,
                          "one rack ms": 1e3 * ring_allreduce(f, nbytes, rack)}
    return pd.DataFrame(rows).T


def allreduce_table(nodes: int = 4, g: int = 8, nbytes: float = 100 * MB) -> pd.DataFrame:
    """Flat ring, leader and rail-aware all-reduce on NVSwitch nodes, with one NIC per GPU on rails
    or one NIC per node, flow by flow (milliseconds)."""
    rows = {}
    for network in ("rails", "tor"):
        f = gpu_cluster(nodes, g, "nvswitch", network)
        rows[network] = {"flat ring": fs.flat_ring(f, nbytes), "leader": fs.leader_allreduce(f, nbytes, g),
                         "rail-aware": fs.rail_allreduce(f, nbytes, g)}
    return 1e3 * pd.DataFrame(rows).T


def bml_table(nbytes: float = 100 * MB) -> pd.DataFrame:
    """BML on BCube(n, k) against a sharded parameter server on a fat-tree, same hosts and links."""
    rows = {}
    for n, k, kft in ((4, 1, 4), (4, 2, 8), (8, 1, 8)):
        hosts = n ** (k + 1)
        tree, cube = fat_tree(kft, "100GbIB"), bcube(n, k, "100GbIB")
        ps, bml = fs.ps_sync(tree, nbytes, range(hosts)), fs.bml_sync(cube, nbytes, n, k)
        rows[f"BCube({n},{k})"] = {"hosts": hosts, "fat-tree PS ms": 1e3 * ps, "BML ms": 1e3 * bml,
                                   "time ratio": bml / ps, "1/(k+1)": 1 / (k + 1),
                                   "BCube switches": switch_count(cube),
                                   "fat-tree switches (5N/n)": 5 * hosts / n,
                                   "switch ratio": switch_count(cube) / (5 * hosts / n)}
    return pd.DataFrame(rows).T


# ----------------------------------------------------------------------------- in-network aggregation
def ina_table(workers=(4, 8, 16, 32), sizes=(64e3, 1 * MB, 16 * MB, 256 * MB)) -> pd.DataFrame:
    """Speedup of in-network aggregation over a ring all-reduce, workers x message size."""
    return pd.DataFrame({f"{s / MB:g} MB": [ina_speedup(s, w) for w in workers] for s in sizes},
                        index=pd.Index(workers, name="workers"))


def slots_table(nbytes: float = 64 * MB, workers: int = 8, pools=(16, 64, 128, 256, 512, 2048)) -> pd.DataFrame:
    """The slot pool's window: speedup against pool size."""
    return pd.DataFrame({"pool KB": [s * 256 / 1e3 for s in pools],
                         "speedup": [ina_speedup(nbytes, workers, slots=s) for s in pools]},
                        index=pd.Index(pools, name="slots"))


def _switch_rank(comm, n):
    g = torch.Generator().manual_seed(comm.rank)
    x = torch.randn(n, generator=g)
    out = switch_allreduce(comm, x, slots=8, elements=64)
    if comm.rank == comm.world_size - 1:
        return out, None
    return (out - sum(torch.randn(n, generator=torch.Generator().manual_seed(r)) for r in range(comm.world_size - 1))
            ).abs().max().item(), comm.stats.bytes_sent


def switch_run(workers: int = 4, n: int = 10_000) -> pd.DataFrame:
    """The switch rank on threads: its error against the float sum, and each worker's bytes
    against the ring's."""
    results = launch(_switch_rank, workers + 1, "threads", args=(n,))
    record = results[-1][0]
    return pd.DataFrame({"max |error|": [max(r[0] for r in results[:-1])],
                         "bytes sent/worker": [results[0][1]], "wire formula": [4 * (n + -(-n // 64)) + 16],  # values, one index per packet, the scale exchange
                         "ring bytes/worker": [2 * (workers - 1) / workers * 4 * n],
                         "slots": [8], "switch memory B": [record["pool_bytes"]]}, index=[f"{workers} workers"])


def switch_training(workers: int = 4, steps: int = 20, net: str = "rdma-100GbE") -> tuple[dict, pd.DataFrame]:
    """The digits MLP trained on threads over ``arch="ring"`` and ``arch="switchml"`` (8 slots of 64
    values): {arch: History}, and per arch the bytes each worker sent per step (run and formula:
    the ring's 2 (p-1)/p of the 4n gradient bytes, the switch's 4 (n + chunks) + 16), the
    simulated ms of a step (the run's clock, median over the steps, whose last batch of an epoch
    is smaller; and the closed form of a full batch: compute plus ``ring.cost`` or
    :func:`~commlab.arch.innetwork.ina_time`), and the final loss."""
    trainers = {arch: Trainer(model="mlp", data="digits", workers=workers, arch=arch, net=net, runtime="threads",
                              seed=0, progress=False) for arch in ("ring", "switchml")}
    runs = {arch: t.fit(steps=steps) for arch, t in trainers.items()}
    t = trainers["ring"]
    n, compute = t.num_params, t.flops_per_sample * t.config.batch_size / t.network.flops
    switch = InNetwork()  # the defaults of arch="switchml"
    formula = {"ring": 2 * (workers - 1) / workers * 4 * n, "switchml": 4 * (n + -(-n // switch.elements)) + 16}
    closed = {"ring": ring.cost(4 * n, workers, link(net)), "switchml": switch.time(4 * n, workers, net)}
    table = pd.DataFrame({arch: {"bytes/worker/step": sum(h.bytes_sent[-1]) / workers, "formula": formula[arch],
                                 "sim ms/step": 1e3 * float(np.median(np.diff(h.sim_time, prepend=0.0))),
                                 "closed form ms/step": 1e3 * (compute + closed[arch]), "final loss": h.loss[-1]}
                          for arch, h in runs.items()}).T
    return runs, table


# ----------------------------------------------------------------------------- protocols
def protocol_table() -> pd.DataFrame:
    """Per transport: latency (us), effective GB/s and CPU seconds per GB copied."""
    rows = {n: {"latency us": p.latency * 1e6, "GB/s": p.gbytes_per_s, "CPU s per GB": p.cpu_seconds(1e9)}
            for n, p in PROTOCOLS.items()}
    return pd.DataFrame(rows).T


def scaling_table(model: str = "resnet50", nodes=(1, 2, 4, 8, 16, 32), protocols=("rdma-100GbIB", "tcp-100GbE", "tcp-10GbE"),
                  gpus_per_node: int = 4) -> pd.DataFrame:
    """Scaling efficiency (speedup / GPUs) of the same job on each protocol (WFBP, ring)."""
    return pd.DataFrame({p: [iteration(model, Cluster(n, gpus_per_node, inter=p), method="wfbp_a2a").speedup /
                             (n * gpus_per_node) for n in nodes] for p in protocols},
                        index=pd.Index([n * gpus_per_node for n in nodes], name="GPUs"))


# ----------------------------------------------------------------------------- jobs
DATACENTER = placement.Datacenter(racks=2, nodes_per_rack=4, gpus_per_node=4, intra="NVLink")


def jobs_table(n_jobs: int = 120, seed: int = 0, mean_interarrival: float = 10.0) -> pd.DataFrame:
    """Average JCT, makespan and utilization for every queue x placement on one busy workload."""
    work = jobs.workload(n_jobs, DATACENTER, seed=seed, mean_interarrival=mean_interarrival)
    rows = {}
    for q in jobs.QUEUES:
        for p in placement.PLACEMENTS:
            r = jobs.simulate_jobs(work, DATACENTER, queue=q, placement=p)
            rows[(q, p)] = {"average JCT h": r.average_jct / 3600, "makespan h": r.makespan / 3600,
                            "utilization": r.utilization}
    return pd.DataFrame(rows).T.rename_axis(["queue", "placement"])


# ----------------------------------------------------------------------------- inference
def decode_table(model: str = "llama2-70b", tps=(1, 2, 4, 8, 16), links=("NVLink3-A100", "100GbIB-survey", "tcp-100GbE")):
    """Milliseconds per token of tensor-parallel decoding, and the communication's share."""
    ms = pd.DataFrame({l: [1e3 * inference.tp_decode(model, t, l).time for t in tps] for l in links},
                      index=pd.Index(tps, name="tp"))
    share = pd.DataFrame({l: [inference.tp_decode(model, t, l).comm_share for t in tps] for l in links},
                         index=pd.Index(tps, name="tp"))
    return ms, share


def kv_table(models=("llama2-70b", "gpt3-175b"), tokens=(512, 4096), tp: int = 8) -> pd.DataFrame:
    """Per model and prompt length: KV cache GB, prefill ms and transfer ms over 200Gb IB and TCP 100GbE."""
    rows = {}
    for m in models:
        for t in tokens:
            rows[(m, t)] = {"KV cache GB": inference.kv_bytes(m, t) / 1e9,
                            f"prefill ms (tp={tp})": 1e3 * inference.prefill_time(m, t, tp),
                            "transfer ms, 200Gb IB": 1e3 * inference.kv_transfer(m, t, "200GbHDR-IB", tp),
                            "transfer ms, TCP 100GbE": 1e3 * inference.kv_transfer(m, t, "tcp-100GbE", tp)}
    return pd.DataFrame(rows).T.rename_axis(["model", "prompt tokens"])


# ----------------------------------------------------------------------------- faults
def goodput_table(gpus=(512, 2048, 8192, 16384, 65536), checkpoint: float = 120.0, restart: float = 600.0,
                  runs: int = 100) -> pd.DataFrame:
    """Per GPU count: job MTBF, Young/Daly interval and goodput (formula, simulated, hourly checkpoints)."""
    rows = {}
    for n in gpus:
        m = faults.job_mtbf(n)
        tau = faults.young_daly(checkpoint, m)
        rows[n] = {"job MTBF h": m / 3600, "Young/Daly min": tau / 60,
                   "goodput (formula)": faults.goodput(tau, checkpoint, m, restart),
                   "goodput (simulated)": faults.simulate(tau, checkpoint, m, restart, runs=runs, seed=n),
                   "goodput, hourly (simulated)": faults.simulate(3600.0, checkpoint, m, restart, runs=runs, seed=n)}
    return pd.DataFrame(rows).T.rename_axis("GPUs")


def llama3_table(gpus: int = 16384, costs=((120, 600), (120, 0), (30, 600), (10, 600), (10, 120)),
                 runs: int = 100) -> pd.DataFrame:
    """Goodput at LLaMA 3's failure rate for several (checkpoint, restart) costs in seconds, each at
    its Young/Daly interval, with the first-order formula's three losses: the checkpoints'
    C / (tau + C), the work lost at a failure (tau + C) / 2 / M and the restarts' R / M."""
    m = faults.job_mtbf(gpus)
    rows = {}
    for c, r in costs:
        tau = faults.young_daly(c, m)
        rows[(c, r)] = {"Young/Daly min": tau / 60, "checkpoints": c / (tau + c), "lost work": (tau + c) / 2 / m,
                        "restarts": r / m, "goodput (formula)": faults.goodput(tau, c, m, r),
                        "goodput (simulated)": faults.simulate(tau, c, m, r, runs=runs, seed=gpus)}
    return pd.DataFrame(rows).T.rename_axis(["checkpoint s", "restart s"])


def checkpoint_for(target: float, gpus: int = 16384, restart: float = 600.0) -> float:
    """The largest checkpoint cost (s) whose first-order goodput at Young/Daly's interval reaches
    ``target`` with ``restart`` seconds per restart (0.0 if none does), by bisection."""
    m = faults.job_mtbf(gpus)
    good = lambda c: faults.goodput(faults.young_daly(c, m), c, m, restart)  # noqa: E731
    lo, hi = 0.0, m
    if good(1e-9) < target:
        return 0.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if good(mid) >= target else (lo, mid)
    return lo


def elastic_runs(directory: str, steps: int = 60, every: int = 10, fail_step: int = 37) -> dict:
    """Gloo: an uninterrupted run on 3 ranks, and one whose rank 2 crashes at ``fail_step``."""
    clean = elastic.run(3, steps, every, directory=directory)
    failed = elastic.run(3, steps, every, fail_rank=2, fail_step=fail_step, directory=directory)
    return {"uninterrupted": clean, "rank 2 lost": failed}


def elastic_figure(runs: dict, ax=None):
    """Training loss of the elastic runs, with lines where a rank was lost and where the run resumed."""
    ax = ax or plt.subplots(figsize=(6.8, 3))[1]
    for (label, r), style in zip(runs.items(), ("-", "--")):
        ax.plot(r["losses"], style, label=label)
    for e in runs["rank 2 lost"]["events"]:
        ax.axvline(e["at_step"], color="C3", lw=0.8)
        ax.axvline(e["resumed_from"], color="C2", lw=0.8, ls=":")
        ax.text(e["at_step"] + 0.5, ax.get_ylim()[1] * 0.9, f"rank {e['failed_rank']} lost", color="C3")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.legend()
    return ax


# ----------------------------------------------------------------------------- widget
def _gradient_bytes(model: str) -> float:
    return sum(builtin(model).grad_bytes)


def fabric_explorer(fabric="fat_tree", oversubscription=2.0, model="bert-large"):
    """The widget: a fabric, its oversubscription and a job -> the ring all-reduce of the job's
    gradient and a sharded PS over (up to) its first 64 hosts, flow by flow, on 100 Gb/s links,
    against the closed form of a ring alone on its links."""
    import ipywidgets as w

    def draw(fabric, oversubscription, model):
        nbytes = _gradient_bytes(model)
        options = {"fat_tree": dict(k=8, oversubscription=oversubscription), "bcube": dict(n=4, k=2),
                   "torus_2d": dict(a=8, b=8), "gpu_cluster": dict(nodes=8, gpus_per_node=8, network="tor")}
        f = build(fabric, link="100GbIB", **options[fabric])
        p = len(f.hosts)
        ranks = range(min(p, 64))
        times = {"ring": ring_allreduce(f, nbytes, ranks), "sharded PS": fs.ps_sync(f, nbytes, ranks),
                 "closed-form ring": ring.cost(nbytes, len(ranks), link("100GbIB"))}
        fig, ax = plt.subplots(figsize=(6, 2.6))
        ax.barh(list(times), [1e3 * t for t in times.values()], color=["C0", "C1", "0.6"])
        ax.set_xlabel("ms per synchronization")
        ax.set_title(f"{f.name}: {len(ranks)} hosts, {model} ({nbytes / MB:.0f} MB)"
                     + ("" if fabric == "fat_tree" else "; oversubscription applies to the fat-tree"), fontsize=9)
        fig.tight_layout()
        return fig

    return explorer.explore(draw, dict(fabric=w.Dropdown(options=["fat_tree", "bcube", "torus_2d", "gpu_cluster"], value=fabric),
                       oversubscription=w.SelectionSlider(options=[1.0, 2.0, 4.0, 8.0], value=oversubscription,
                                                          continuous_update=False),
                       model=w.Dropdown(options=["resnet50", "bert-base", "bert-large"], value=model)))
