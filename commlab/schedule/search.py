"""A general scheduler: search the fuse and split choices for the fastest plan of one configuration.

The quantitative survey (Shi et al., IEEE Network 2021) ends by asking for a scheduler that
chooses, per model and network, how to fuse and split, rather than one fixed rule. Two
searches over the same dispatcher the executors use (:mod:`commlab.schedule.dispatch`):

* **Fusing, exactly** (:func:`best_buckets`). Sent first-come first-served, buckets are runs of
  consecutive layers in backward order, a bucket is ready with its last layer, and the end of
  the last message is all that matters for the iteration. The earliest end of the first j
  layers' messages obeys a dynamic programme over where the last bucket begins::

      E(0) = 0,   E(j) = min_{i<j} max(E(i), ready_j) + t_c(bytes of layers i..j-1)

  A later prefix end never helps what follows (a bucket starts at max(previous end, ready)), so
  the optimum over every prefix gives the optimum of all bucketings: O(L^2) evaluations of
  t_c. MG-WFBP's one greedy pass can only match it. Splitting a layer cannot help a
  first-come first-served schedule (its pieces are ready together and t_c(a) + t_c(b) >=
  t_c(a + b) when t_c has a start-up cost), so splits matter only with priorities:
* **Splitting and priorities**: ByteScheduler plans over a grid of partition and credit sizes
  (the next forward then waits per layer only).

``search(partitions_mb=(1, 4, 16), credits_mb=(4, 16, 64))`` returns whichever plan, the exact
buckets or a grid point, gives the least steady-state seconds per iteration
(:func:`~commlab.schedule.dispatch.iteration`) under ``comm_time``; on a tie (within a
relative 1e-9, float noise) the buckets, which need no priorities, win.
"""
from __future__ import annotations

from .dispatch import iteration
from .policies import ByteScheduler, Plan, Schedule, buckets_of, whole_layers


def best_buckets(profile, comm_time) -> list[list[int]]:
    """Buckets (lists of layers, in send order) with the earliest possible end of the last message."""
    order = list(reversed(range(profile.layers)))  # backward order: the order gradients become ready
    ready = profile.ready()
    size = [0]
    for l in order:
        size.append(size[-1] + profile.grad_bytes[l])
    end, cut = [0.0] + [float("inf")] * len(order), [0] * (len(order) + 1)
    for j in range(1, len(order) + 1):
        r = ready[order[j - 1]]
        for i in range(j):
            t = max(end[i], r) + comm_time(size[j] - size[i])
            if t < end[j]:
                end[j], cut[j] = t, i
    groups, j = [], len(order)
    while j > 0:
        groups.append(order[cut[j]:j])
        j = cut[j]
    return groups[::-1]


class Search(Schedule):
    """``search(partitions_mb, credits_mb)``: try the exact best buckets and a ByteScheduler grid, keep
    the fastest."""
    name = "search"

    def __init__(self, partitions_mb=(1, 4, 16), credits_mb=(4, 16, 64)):
        self.partitions_mb, self.credits_mb = tuple(partitions_mb), tuple(credits_mb)
        if not self.partitions_mb or not self.credits_mb:
            raise ValueError("search needs at least one partition size and one credit size")
        for p in self.partitions_mb:  # ByteScheduler checks each value (> 0)
            ByteScheduler(p, max(p, *self.credits_mb))

    def candidates(self, profile, comm_time) -> list[Plan]:
        """The exact buckets, then each ByteScheduler grid point with credit >= partition."""
        fused = Plan("search:buckets", whole_layers(profile), buckets_of(best_buckets(profile, comm_time)))
        grid = [(p, c, ByteScheduler(p, c).plan(profile, comm_time)) for p in self.partitions_mb
                for c in self.credits_mb if c >= p]
        return [fused] + [Plan(f"search:bytescheduler(partition_mb={p:g}, credit_mb={c:g})", plan.pieces,
                               credit=plan.credit, forward_waits=True) for p, c, plan in grid]

    def plan(self, profile, comm_time) -> Plan:
        """The candidate whose dispatched iteration is fastest (a tie keeps the simpler); needs ``comm_time``."""
        if comm_time is None:
            raise ValueError("search needs comm_time(nbytes): the best plan depends on the network")
        best, best_time = None, float("inf")
        for plan in self.candidates(profile, comm_time):  # in order of simplicity: a tie keeps the simpler
            t = iteration(plan, profile, comm_time)[0]
            if t < best_time * (1 - 1e-9):
                best, best_time = plan, t
        return best
