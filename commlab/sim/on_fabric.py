"""The ``comm_time`` of a collective on a fabric, flow by flow: what lets an iteration run on a fabric.

:func:`commlab.sim.iteration` plans and composes an iteration from ``comm_time(nbytes)``, the
seconds of one message. On a :class:`~commlab.sim.cluster.Cluster` that is a closed form
(:mod:`commlab.sim.closed_forms`); on a :class:`~commlab.sim.fabric.Fabric` (a fat-tree with its
oversubscription, BCube, a torus, :func:`~commlab.sim.gpu_fabric.gpu_cluster`) it is the time the
flow-level model gives the collective (:mod:`commlab.sim.fabric_sync`, max-min fair sharing of
every link, :mod:`commlab.sim.flows`), so that the fabric's wiring shows in the iteration.

:class:`OnFabric` ``(fabric, allreduce="ring", gpus_per_node=None)``: every host of the fabric is a
data-parallel worker (a GPU), in rank order. ``arch="allreduce"`` runs :data:`ALLREDUCE`
[``allreduce``]: ``"ring"``, one ring through every host (:func:`~commlab.sim.fabric_sync.flat_ring`);
``"rail"``, the rail-aware two-level all-reduce, and ``"leader"``, a ring of one leader per node
(both need ``gpus_per_node``). ``arch="ps"``: a parameter server sharded over the workers
themselves, every worker pushing n/P to every other and pulling the sums
(:func:`~commlab.sim.fabric_sync.ps_sync`; so no ``servers=``).

**Two simulations per collective, not one per message.** Every phase of these algorithms is a set
of flows that start together, each of a fixed fraction of n bytes. Max-min fair rates depend only on
which flows are active, never on their sizes, so multiplying n by c multiplies every interval
between two finishes by c and leaves the start-up alpha: the collective's time is exactly a line,
``T(n) = a + b n``, a the start-ups of its phases. :func:`line` measures it at two sizes (``a`` is
then also the time a 0-byte message costs, the alpha-beta convention that MG-WFBP's planner reads
as ``comm_time(0)``; the flow model itself would send no flow). A planner asks for hundreds of
sizes, and the flow model costs seconds on a thousand hosts; the line costs two runs per
(fabric, algorithm), kept in the OnFabric. ``tests/test_sim_on_fabric.py`` checks the line against
the flow model run at every size it is asked for.

Cost of one message on a non-blocking fabric with one GPU per host and the ring: 2 (P-1)
(alpha + n/(P C)), the closed form of a :class:`Cluster` with the same link; on a fat-tree with
r:1 oversubscription the ring's cross-rack hop runs at C/r: 2 (P-1) (alpha + r n/(P C)).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import checks
from . import fabric_sync
from .fabric import Fabric

ALLREDUCE = {"ring": fabric_sync.flat_ring, "rail": fabric_sync.rail_allreduce,
             "leader": fabric_sync.leader_allreduce}
ARCHS = ("allreduce", "ps")
UNIT = 1e6  # bytes: the line's first size (the second is twice it); any size gives the same line


def line(collective, unit: float = UNIT):
    """``comm_time(n) = a + b n`` through the times of ``collective(n)`` at ``unit`` and ``2 unit``
    bytes: exact for a collective of phases whose flows start together and carry bytes in
    proportion to n (every algorithm of :mod:`commlab.sim.fabric_sync`; see the module doc)."""
    one, two = collective(unit), collective(2 * unit)
    slope = (two - one) / unit
    startup = one - slope * unit
    return lambda n: startup + slope * n


@dataclass(frozen=True, eq=False)
class OnFabric:
    """Data-parallel workers on every host of ``fabric``; ``allreduce`` a name of :data:`ALLREDUCE`;
    ``gpus_per_node`` (needed by "rail" and "leader") the hosts of one node, ranks node by node."""

    fabric: Fabric
    allreduce: str = "ring"
    gpus_per_node: int | None = None
    _lines: dict = field(default_factory=dict, repr=False)  # arch -> comm_time, computed once

    def __post_init__(self):
        if not isinstance(self.fabric, Fabric):
            raise ValueError(f"OnFabric: fabric={self.fabric!r} must be a Fabric (sim.fat_tree, sim.bcube, "
                             "sim.torus_2d, sim.gpu_cluster, ...)")
        checks.choice("all-reduce on a fabric", self.allreduce, ALLREDUCE, where="OnFabric")
        if self.gpus_per_node is not None:
            fabric_sync.node_groups(self.fabric, self.gpus_per_node)  # raises unless it divides the hosts
        elif self.allreduce != "ring":
            raise ValueError(f"OnFabric: allreduce={self.allreduce!r} needs gpus_per_node (the hosts of one "
                             "node, ranked node by node); allreduce='ring' does not")

    @property
    def gpus(self) -> int:
        """P: every host of the fabric."""
        return len(self.fabric.hosts)

    def comm_time(self, arch: str = "allreduce", servers: int | None = None):
        """``comm_time(nbytes) -> seconds`` of one message of ``arch`` (in :data:`ARCHS`), flow by flow."""
        checks.choice("arch on a fabric", arch, ARCHS, where="OnFabric")
        if servers is not None:
            raise ValueError(f"OnFabric: servers={servers!r}, but on a fabric the parameter server is sharded "
                             "over the workers themselves (fabric_sync.ps_sync); leave servers out")
        if arch not in self._lines:
            self._lines[arch] = line(self._collective(arch))
        return self._lines[arch]

    def _collective(self, arch: str):
        if arch == "ps":
            return lambda n: fabric_sync.ps_sync(self.fabric, n)
        if self.allreduce == "ring":
            return lambda n: fabric_sync.flat_ring(self.fabric, n)
        return lambda n: ALLREDUCE[self.allreduce](self.fabric, n, self.gpus_per_node)

    def __str__(self) -> str:
        return f"{self.fabric.name} at flow level ({self.gpus} GPUs; all-reduce: {self.allreduce})"
