"""The simulated clock: what a run would take on a modelled network.

Every rank keeps its own clock ``now``. A message of ``n`` bytes from a sender whose clock
reads ``t`` leaves at ``max(t, out_free)`` and arrives ``alpha + n * beta`` later, or
later still if the receiver is busy taking another message: each endpoint sends one
message at a time and receives one message at a time (full duplex), so a rank that many
others send to (a parameter server) becomes a bottleneck::

    depart  = max(now_s, out_free_s);            out_free_s = depart + T(n)
    arrive  = max(depart, in_free_r) + T(n);     in_free_r  = arrive
    now_r   = max(now_r, arrive)                 (when the receiver takes the message)

with ``T(n) = alpha + n * beta`` from the slower of the two endpoints' links. A native
collective starts when the last rank arrives (``max`` of the clocks) and lasts its closed
form from :mod:`commlab.net.cost`.

Compute enters the clock explicitly, so that the same seed gives the same simulated
time: ``comm.compute(seconds=...)`` or ``comm.compute(flops=...)`` at the network's FLOP
rate. ``Network(measure_compute=True)`` instead adds the thread CPU time spent between
communication calls (real but not reproducible).
"""
from __future__ import annotations

import time
from collections import defaultdict, deque

from .. import checks
from . import cost
from .link import LinkModel, get_link


DEFAULT_FLOPS = 1e12


class Network:
    """A network model for a run: a link for every rank, a compute rate, per-rank slowdowns.

    link: a LinkModel or profile name ("10GbE", "100GbIB", ...).
    links: optional {rank: link} overrides (a rank on a slow link).
    flops: compute rate in FLOP/s used by ``comm.compute(flops=...)``; the default 1e12
        (1 TFLOP/s sustained, a modest GPU) keeps simulated compute small next to the wire.
    slowdown: optional {rank: factor} multiplying that rank's compute time (a persistent
        straggler), or a :class:`~commlab.net.stragglers.Stragglers` (random, seeded, per step).
    measure_compute: add measured thread CPU time between communication calls.
    ranks_per_node, intra_link: nodes of ``ranks_per_node`` consecutive ranks (rank r on node
        r // ranks_per_node); a message between two ranks of one node goes over ``intra_link``
        (NVLink, PCIe), any other over the ranks' own links as above. Give both or neither.
    """

    def __init__(self, link="10GbE", links=None, flops: float | None = DEFAULT_FLOPS, slowdown=None,
                 measure_compute: bool = False, ranks_per_node: int | None = None, intra_link=None):
        if (ranks_per_node is None) != (intra_link is None):
            raise ValueError("give both ranks_per_node= and intra_link= (a node's ranks and the link between "
                             f"them), or neither; got ranks_per_node={ranks_per_node!r}, intra_link={intra_link!r}")
        if ranks_per_node is not None and (not checks.is_int(ranks_per_node) or ranks_per_node < 1):
            raise ValueError(f"ranks_per_node must be an integer >= 1, got {ranks_per_node!r}")
        self.ranks_per_node = ranks_per_node
        self.intra_link = None if intra_link is None else get_link(intra_link)
        self.link = get_link(link)
        self.links = {int(r): get_link(l) for r, l in (links or {}).items()}
        if flops is not None and not flops > 0:
            raise ValueError(f"flops must be a positive FLOP/s rate, got {flops!r}")
        self.flops = flops
        if callable(slowdown):
            self.slowdown = slowdown
        elif slowdown is None or isinstance(slowdown, dict):
            self.slowdown = {int(r): float(f) for r, f in (slowdown or {}).items()}
            for r, f in self.slowdown.items():
                if not f > 0:
                    raise ValueError(f"slowdown of rank {r} must be > 0, got {f!r}")
        else:
            raise TypeError(f"slowdown must be a {{rank: factor}} dict or a Stragglers(...), got {slowdown!r}")
        self.measure_compute = measure_compute

    def slowdown_of(self, rank: int, k: int) -> float:
        """The factor on rank ``rank``'s compute time at its k-th compute call."""
        if callable(self.slowdown):
            return self.slowdown(rank, k)
        return self.slowdown.get(rank, 1.0)

    def link_of(self, rank: int) -> LinkModel:
        """The link of ``rank``: its override in ``links``, else the default link."""
        return self.links.get(rank, self.link)

    def same_node(self, a: int, b: int) -> bool:
        """Whether ranks a and b share a node (never without ``ranks_per_node``)."""
        return self.ranks_per_node is not None and a // self.ranks_per_node == b // self.ranks_per_node

    def message_time(self, src: int, dst: int, nbytes: float) -> float:
        """Seconds of one message: T(n) on the intra link within a node, else
        max(alpha) + n max(beta) of the two endpoints' links."""
        if self.same_node(src, dst):
            return self.intra_link.time(nbytes)
        a, b = self.link_of(src), self.link_of(dst)
        return max(a.alpha, b.alpha) + nbytes * max(a.beta, b.beta)

    def clock(self, rank: int) -> "Clock":
        """A fresh :class:`Clock` for ``rank`` on this network."""
        return Clock(self, rank)

    def __repr__(self) -> str:
        nodes = f", {self.ranks_per_node} ranks per node on {self.intra_link.name}" if self.ranks_per_node else ""
        return (f"Network({self.link.name}, flops={self.flops}, slow links={len(self.links)}, "
                f"slowdown={self.slowdown}{nodes})")


def as_network(net) -> Network | None:
    """None, a profile name, a LinkModel or a Network -> Network or None."""
    if net is None or isinstance(net, Network):
        return net
    return Network(net)


class Clock:
    """One rank's simulated clock (see the module docstring for the rules)."""

    def __init__(self, network: Network, rank: int):
        self.network = network
        self.rank = rank
        self.now = 0.0
        self.computes = 0  # compute calls so far (the k of Network.slowdown_of)
        self.out_free = 0.0
        self.in_free = 0.0
        self._cpu_mark = time.thread_time() if network.measure_compute else None

    def _measure(self) -> None:
        if self._cpu_mark is not None:
            t = time.thread_time()
            self.compute(seconds=t - self._cpu_mark)
            self._cpu_mark = t

    def _remark(self) -> None:
        if self._cpu_mark is not None:
            self._cpu_mark = time.thread_time()

    def compute(self, seconds: float | None = None, flops: float | None = None) -> None:
        """Advance ``now`` by compute of ``seconds``, or of ``flops`` at the network's FLOP rate
        (times this rank's slowdown)."""
        if (seconds is None) == (flops is None):
            raise ValueError("compute() takes exactly one of seconds= or flops=")
        if flops is not None:
            if self.network.flops is None:
                raise ValueError("compute(flops=...) needs Network(flops=<FLOP/s>) to convert FLOPs to seconds")
            seconds = flops / self.network.flops
        self.now += self.charge(seconds)

    def charge(self, seconds: float) -> float:
        """The seconds ``seconds`` of compute really take on this rank (its slowdown), counted as
        a compute call, without advancing ``now``: for a caller that places the work on a
        stream of its own (a scheduled step: :mod:`commlab.schedule.engine`)."""
        if seconds < 0:
            raise ValueError(f"compute time must be >= 0, got {seconds!r}")
        seconds *= self.network.slowdown_of(self.rank, self.computes)
        self.computes += 1
        return seconds

    def send(self, dst: int, nbytes: int) -> float:
        """Book a message of ``nbytes`` to ``dst`` on the out-port; returns when it departs."""
        self._measure()
        depart = max(self.now, self.out_free)
        self.out_free = depart + self.network.message_time(self.rank, dst, nbytes)
        self._remark()
        return depart

    def recv(self, src: int, nbytes: int, depart: float) -> None:
        """Take a message that departed at ``depart``: it arrives after the in-port is free plus its
        transfer time, and ``now`` moves to at least that."""
        self._measure()
        arrive = max(depart, self.in_free) + self.network.message_time(src, self.rank, nbytes)
        self.in_free = arrive
        self.now = max(self.now, arrive)
        self._remark()

    def ready(self) -> float:
        """When this rank could start a collective: its clock and both links are free."""
        return max(self.now, self.out_free, self.in_free)

    def collective(self, start: float, name: str, nbytes: int, world_size: int) -> None:
        """Advance to the end of a native collective that starts at ``start`` (max of clocks)."""
        self._measure()
        net = self.network
        slow = [*net.links.values()] + ([net.intra_link] if net.ranks_per_node and net.ranks_per_node > 1 else [])
        link = net.link  # a collective goes at the pace of its slowest link
        if slow:
            link = max([link, *slow], key=lambda l: (l.beta, l.alpha))
        self.now = start + cost.native(name, nbytes, world_size, link)
        self.out_free = self.in_free = self.now
        self._remark()

    def __repr__(self) -> str:
        return f"Clock(rank {self.rank}, now={self.now:.6g} s)"


def replay(programs, net) -> list[float]:
    """Time a message schedule by the rules above without moving any data.

    ``programs[r]`` lists rank r's messages in its program order, each ``("send", dst, tag,
    nbytes)`` or ``("recv", src, tag, nbytes)``; messages between two ranks with one tag
    arrive in the order they were sent. Each rank runs its list on its own :class:`Clock`
    until it needs a message that has not been sent yet. Returns every rank's clock at the
    end; the max is the schedule's time. Used where a closed form would not be tidy (the
    double binary tree in :func:`commlab.arch.tree.double_tree_cost`)."""
    network = as_network(net)
    if network.measure_compute:
        raise ValueError("replay times messages only; use a Network with measure_compute=False")
    clocks = [network.clock(r) for r in range(len(programs))]
    done = [0] * len(programs)
    wire = defaultdict(deque)  # (src, dst, tag) -> departure times of messages not yet taken
    moved = True
    while moved:
        moved = False
        for r, ops in enumerate(programs):
            while done[r] < len(ops):
                kind, peer, tag, nbytes = ops[done[r]]
                if kind == "send":
                    wire[(r, peer, tag)].append(clocks[r].send(peer, nbytes))
                elif wire[(peer, r, tag)]:
                    clocks[r].recv(peer, nbytes, wire[(peer, r, tag)].popleft())
                else:
                    break
                done[r] += 1
                moved = True
    stuck = [r for r, ops in enumerate(programs) if done[r] < len(ops)]
    if stuck:
        r = stuck[0]
        raise ValueError(f"the schedule deadlocks: rank {r} waits for {programs[r][done[r]]} "
                         f"(ranks stuck: {stuck})")
    return [c.now for c in clocks]
