"""The gossip architecture (``Trainer(arch="gossip(topology='ring')")``) and its exchange.

``Gossip`` answers the questions every architecture answers (:mod:`commlab.arch.architectures`):
it runs only with a decentralized synchronizer (``"neighbours" in sync.needs``: D-PSGD, DCD-PSGD,
ECD-PSGD, CHOCO-SGD, AD-PSGD, naive compressed gossip), launches one rank per worker and no
server, and its closed form is one gossip step, ``max_degree * (alpha + n beta)``.

Each rank's :class:`GossipExchange` is what those synchronizers talk to. It offers what a
neighbourhood can do, and nothing global:

* ``share(x)``: send x to every neighbour, take theirs ({j: x_j}); bytes per edge: x's;
* ``share_compressed(x, key)``: compress x once, send the payload's bytes to every neighbour
  and decode theirs: (C(x_i), {j: C(x_j)}); bytes per edge: the payload's ``nbytes``;
* ``mix(x, others)``: W_ii x + sum_j W_ij others[j], the rank's row of the mixing matrix;
* ``measure(x)``: the average model x_bar and the consensus distance
  (1/n) sum_i ||x_i - x_bar||^2, through an all-reduce that is neither charged on the clock
  nor counted in the bytes (:meth:`commlab.runtime.Comm.unrecorded_all_reduce`): watching a
  run must not change it.

``step`` and ``average`` (a global average) are refused: a gossip graph has none.
"""
from __future__ import annotations

import torch

from ..arch.base import Architecture
from ..arch.exchange import Exchange
from ..compress.base import Payload
from . import gossip
from . import topology as topology_pkg


class GossipExchange(Exchange):
    """One rank's neighbourhood on ``topology``, compressing with ``compressor`` (or None)."""

    own_compute = False  # AD-PSGD: compute runs on a stream of its own, beside the averaging

    def __init__(self, comm, topology, compressor=None):
        self.comm, self.topology, self.compressor = comm, topology, compressor
        self.neighbors = topology.neighbors[comm.rank]
        self.ready_at = 0.0  # with own_compute: when the latest gradient is ready on the clock

    def begin(self, flops: float) -> bool:
        """With ``own_compute``, charge the gradient to the compute stream: it starts now and is
        ready at ``ready_at``; the clock (the averaging's stream) waits for it only in
        :meth:`catch_up`."""
        clock = self.comm.clock
        if not self.own_compute or clock is None or not clock.network.flops:
            return False
        self.ready_at = clock.now + clock.charge(flops / clock.network.flops)
        return True

    def catch_up(self) -> None:
        """The averaging stream waits for the gradient (a pairing leaves, or a step applies, after it)."""
        if self.comm.clock is not None:
            self.comm.clock.now = max(self.comm.clock.now, self.ready_at)

    def share(self, x: torch.Tensor) -> dict[int, torch.Tensor]:
        """Send x to every neighbour and return {j: x_j} received from each."""
        return gossip.share(self.comm, x, self.topology)

    def share_compressed(self, x: torch.Tensor, key="model", compressor=None):
        """(C(x), {j: C(x_j)}) with ``compressor`` (default: the exchange's), decoded (read them,
        never write them); exact values, (x, {j: x_j}), when there is no compressor.

        Where the ranks share memory (threads), the payloads meet at one rendezvous
        (``Comm.gather_shared``, every message still counted and timed as :func:`gossip.share`
        sends it) and each is decoded once, not by its sender and each neighbour."""
        c = compressor or self.compressor
        if c is None:
            return x, self.share(x)
        payload = c.compress(x, key)
        shared = self.comm.gather_shared(payload.to_bytes(), gossip.replay_share(self.topology),
                                         Payload.shared_from_bytes)
        if shared is not None:
            return c.decoded(shared[self.comm.rank]), {j: c.decoded(shared[j]) for j in self.neighbors}
        got = self.share(payload.to_bytes())
        return c.decompress(payload), {j: c.decompress(Payload.from_bytes(b)) for j, b in got.items()}

    def mix(self, x: torch.Tensor, others: dict) -> torch.Tensor:
        """W_ii x + sum_j W_ij x_j with the topology's Metropolis-Hastings weights."""
        return gossip.mix(x, others, self.topology, self.comm.rank)

    def measure(self, x: torch.Tensor, flag: float = 0.0):
        """(x_bar, consensus distance, the ranks whose ``flag`` was nonzero), off the record, in
        one all-reduce of [x_i, ||x_i||^2, flags]: the distance is (1/n) sum_i ||x_i||^2 - ||x_bar||^2,
        in float64 so that a distance far below ||x||^2 (1e-12 of it) survives the difference."""
        n, comm = self.comm.world_size, self.comm
        x = x.detach().double().reshape(-1).cpu()
        total = torch.zeros(x.numel() + 1 + n, dtype=torch.float64)
        total[:x.numel()], total[x.numel()], total[x.numel() + 1 + comm.rank] = x, x.dot(x), flag
        comm.unrecorded_all_reduce(total, "sum")
        mean, flags = total[:x.numel()] / n, total[x.numel() + 1:]
        bad = flags.nonzero().flatten().tolist()
        distance = max(float(total[x.numel()]) / n - float(mean.dot(mean)), 0.0)
        return mean, (float("nan") if bad else distance), bad

    def step(self, model=None, optimizer=None):
        """Always ValueError: gossip has no global average; use a decentralized sync."""
        raise ValueError("arch='gossip' has no global average to step with: each worker averages with its "
                         "neighbours; use a decentralized sync (dpsgd, dcd_psgd, ecd_psgd, choco, adpsgd)")

    def average(self, tensors):
        """Always ValueError, as :meth:`step`: gossip has no global average."""
        self.step()

    def __repr__(self) -> str:
        return f"GossipExchange({self.topology!r}, compressor={self.compressor!r})"


class Gossip(Architecture):
    """The gossip architecture: ``gossip``, ``gossip(topology="torus")``,
    ``gossip(topology="random_regular", d=4, seed=1)``. Extra keywords go to the topology."""

    name = "gossip"
    provides = frozenset({"neighbours"})
    decodes = "each"  # a neighbour decodes each payload alone

    def __init__(self, topology: str = "ring", **options):
        if not isinstance(topology, topology_pkg.Topology):
            topology_pkg.parse(topology)  # a mistyped name fails here, listing the valid ones
        self.topology, self.options = topology, options
        self._built: dict[int, topology_pkg.Topology] = {}

    def topology_for(self, n: int) -> topology_pkg.Topology:
        """The topology on ``n`` nodes (built once per size; a size it cannot have, or a
        disconnected graph, is a ValueError)."""
        if n not in self._built:
            top = topology_pkg.get(self.topology, n, **self.options)
            if not top.is_connected():
                raise ValueError(f"topology {top!r} is disconnected: gossip could never bring its parts to "
                                 "agree; valid: a connected graph (ring, torus, hypercube, exponential, "
                                 "complete, star, random_regular)")
            self._built[n] = top
        return self._built[n]

    def check_workers(self, workers: int) -> None:
        """The topology exists, connected, on ``workers`` nodes (ValueError naming what is valid)."""
        self.topology_for(workers)

    def mix(self, comm, x: torch.Tensor) -> torch.Tensor:
        """One gossip step of ``x`` with the neighbours of this rank."""
        return gossip.gossip_step(comm, x, self.topology_for(comm.world_size))

    def exchange(self, comm, model, optimizer, setup) -> GossipExchange:
        """This rank's :class:`GossipExchange` on the topology for the world size, with the compressor."""
        return GossipExchange(comm, self.topology_for(comm.world_size), setup.compressor)

    def time(self, nbytes: float, workers: int, link, network=None) -> float:
        """Closed-form seconds of one gossip step of ``nbytes`` per node; the run's
        ``network`` does not enter: every message is on ``link``."""
        return gossip.cost(nbytes, self.topology_for(workers).max_degree, link)

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"Gossip(topology={self.topology!r}{extra})"

