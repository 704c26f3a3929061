"""Flow-level simulation on a fabric: flows that cross a link share it max-min fairly.

Between the alpha-beta model (each message alone on its link) and a packet simulator sits the
standard flow-level model: every flow in progress gets a rate, the rates are the **max-min fair**
allocation of the links' capacities, and they are solved again whenever a flow starts or ends.
Max-min by progressive filling (Bertsekas and Gallager, *Data Networks*, 6.5.2): raise every
unfrozen flow's rate together; the first link to fill freezes the flows through it at its fair
share, capacity left / unfrozen flows on it; repeat with what remains.

A flow of n bytes alone on its path then takes alpha + n / C (C its slowest link's capacity, alpha
the fabric's start-up): the alpha-beta time. k flows on one link get C/k each.

* :func:`max_min_rates` ``(paths, capacity)``: the allocation for fixed flows;
* :func:`simulate` ``(fabric, flows)``: when each flow finishes, flows given as (src host, dst host,
  bytes, start seconds);
* :func:`ring_allreduce` ``(fabric, nbytes, ranks)``: a ring all-reduce as its 2 (p-1) steps, each
  p flows of n/p bytes from every rank to the next, a step starting when the previous ends.
"""
from __future__ import annotations

import math

from .. import checks


def max_min_rates(paths, capacity: dict) -> list[float]:
    """Max-min fair rates (bytes/s) of flows with these ``paths`` (lists of directed links)."""
    users: dict = {}
    for f, path in enumerate(paths):
        if not path:
            raise ValueError(f"flow {f} has an empty path (a host sending to itself)")
        for e in path:
            users.setdefault(e, []).append(f)
    left = {e: float(capacity[e]) for e in users}
    count = {e: len(fs) for e, fs in users.items()}
    rates = [math.nan] * len(paths)
    unfrozen = len(paths)
    while unfrozen:
        edge = min((e for e in users if count[e]), key=lambda e: left[e] / count[e])
        share = left[edge] / count[edge]
        for f in users[edge]:
            if math.isnan(rates[f]):
                rates[f] = share
                unfrozen -= 1
                for e in paths[f]:
                    left[e] -= share
                    count[e] -= 1
    return rates


def _check_fabric(fabric, where: str) -> None:
    from .fabric import Fabric

    if not isinstance(fabric, Fabric):
        raise TypeError(f"{where}: fabric={fabric!r} must be a Fabric (sim.fat_tree, sim.bcube, sim.torus_2d, "
                        f"sim.gpu_cluster, ...), not a {type(fabric).__name__}")


def simulate(fabric, flows) -> list[float]:
    """Finish time (seconds) of each flow ``(src, dst, nbytes, start)`` on ``fabric``: its bytes move
    at its max-min fair rate, solved again at every start and end; alpha is added at the end."""
    _check_fabric(fabric, "simulate")
    for f, (src, dst, nbytes, start) in enumerate(flows):
        checks.number(f"flow {f}'s bytes", nbytes, 0, where="simulate")
        checks.number(f"flow {f}'s start", start, 0, where="simulate")
        if src == dst:
            raise ValueError(f"simulate: flow {f} goes from host {src} to itself; a flow joins two hosts")
    paths = [fabric.path(src, dst) for src, dst, _, _ in flows]
    pending = sorted(range(len(flows)), key=lambda f: flows[f][3])[::-1]  # pop() gives the earliest
    left = {}
    finish = [math.nan] * len(flows)
    t = 0.0
    while pending or left:
        if not left:
            t = max(t, flows[pending[-1]][3])
        while pending and flows[pending[-1]][3] <= t:
            f = pending.pop()
            if flows[f][2] <= 0:
                finish[f] = t + fabric.alpha
            else:
                left[f] = float(flows[f][2])
        if not left:
            continue
        ids = list(left)
        rates = max_min_rates([paths[f] for f in ids], fabric.capacity)
        dt = min(left[f] / r for f, r in zip(ids, rates))
        if pending:
            dt = min(dt, flows[pending[-1]][3] - t)
        t += dt
        for f, r in zip(ids, rates):
            left[f] -= r * dt
            if left[f] <= 1e-9 * flows[f][2]:
                del left[f]
                finish[f] = t + fabric.alpha
    return finish


def ring_allreduce(fabric, nbytes: float, ranks=None) -> float:
    """Seconds of a ring all-reduce of ``nbytes`` over ``ranks`` (all hosts by default): 2 (p-1)
    steps of p simultaneous flows of n/p bytes, rank i to rank i+1. On a fabric where no two of a
    step's flows share a link this is the closed form 2 (p-1) (alpha + n/(p C))."""
    _check_fabric(fabric, "ring_allreduce")
    checks.number("nbytes", nbytes, 0, where="ring_allreduce")
    hosts = len(fabric.hosts)
    ranks = list(range(hosts)) if ranks is None else list(ranks)
    for r in ranks:
        checks.count("a rank in ranks", r, 0, hosts - 1, where="ring_allreduce")
    if not ranks or len(set(ranks)) != len(ranks):
        raise ValueError(f"ring_allreduce: ranks={ranks!r} must name one or more distinct hosts of 0..{hosts - 1}")
    p = len(ranks)
    if p < 2:
        return 0.0
    step = simulate(fabric, [(ranks[i], ranks[(i + 1) % p], nbytes / p, 0.0) for i in range(p)])
    return 2 * (p - 1) * max(step)  # every step moves the same flows: the same time
