"""A cluster: nodes of GPUs, a link inside a node and a link between nodes.

``Cluster(nodes, gpus_per_node, intra=..., inter=..., allreduce="ring")`` has P = nodes x
gpus_per_node GPUs, ranked node by node (rank r on node r // gpus_per_node). A link is a name of
:data:`commlab.net.link.PROFILES` (nominal, measured in the literature: :mod:`commlab.net.measured`,
or a transport: :mod:`commlab.net.protocols`), or a :class:`~commlab.net.link.LinkModel`.

**Endpoints.** Every GPU has its own port onto the intra-node link (PCIe, NVLink); every node has
one network card (NIC) shared by its GPUs, and every inter-node message leaves through the
sender's NIC and enters through the receiver's (a GPU's own PCIe hop to the NIC is not charged
separately). A parameter server is a machine of its own with its own NIC. Each port sends one
message at a time and takes one at a time (:mod:`commlab.net.clock`'s rules), which is what the
message level (:mod:`commlab.sim.events`) times.

**All-reduce across the two levels.** We model what NCCL does by default (and so Horovod, which
hands its fused buffers to NCCL, and PyTorch DDP): one **ring through all P GPUs**, node after
node, reduce-scatter then all-gather. Each of its 2 (P-1) steps moves a chunk of n/P bytes over
every hop of the ring at once: the g-1 hops inside each node on the intra link, one hop out of
each node through its NIC. A step lasts as long as its slowest hop, so::

    T_ring(n) = 2 (P-1) max(T_intra(n/P), T_inter(n/P))
              = max(ring.cost(n, P, intra), ring.cost(n, P, inter))

(only the kinds of hop present: a single node has no NIC hop, one GPU per node no intra hop,
and then this is exactly :func:`commlab.arch.ring.cost`). Why this one model: NCCL builds its
rings (and trees) over all GPUs and each NIC carries one ring flow, so the inter-node hop is the
bottleneck through which every chunk passes; a leader-based hierarchy would send the whole
vector through one GPU per node. Its price, in the model as on real clusters, is latency:
2 (P-1) start-ups, which is why MG-WFBP merges more at scale. NCCL's trees (from 2.4) cut the
latency to O(log P) for small messages: ``allreduce="nccl"`` takes, per message, the faster of
the ring and that tree (:func:`commlab.sim.closed_forms.tree`). ``allreduce="hierarchical"``
gives the leader-based alternative of :mod:`commlab.arch.hierarchical` (reduce to each node's
first GPU, ring across the leaders, broadcast back; Horovod's ``HOROVOD_HIERARCHICAL_ALLREDUCE``
is a variant of it). Any all-reduce registered with a cluster cost
(:func:`commlab.arch.register_allreduce`, ``on_cluster=``) is a valid ``allreduce=`` too:
:func:`commlab.sim.closed_forms.allreduce_names` lists them.

**Parameter server.** BytePS-style (Jiang et al., OSDI 2020), as the survey ran it: S server
machines (by default one per worker node), every tensor cut into S pieces, piece s on server s.
A step of n bytes: reduce-scatter inside each node over the intra link, the node pushes its n
bytes to the servers through its NIC and pulls the sums back, then an all-gather inside the
node. The push and pull follow :func:`commlab.arch.ps_layout.ps_sharded` (staggered: 2 max(p, S)
T(n/S) for p >= 2 worker nodes). With one worker node BytePS uses no server at all (its
non-distributed mode is a plain NCCL all-reduce), and neither do we.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from ..net.link import LinkModel
from ..net.link import get_link as link
from .closed_forms import allreduce_names


@dataclass(frozen=True)
class Cluster:
    """``nodes`` nodes of ``gpus_per_node`` GPUs; ``intra``/``inter`` links (names or LinkModels);
    ``allreduce``: "ring" (NCCL's ring through all GPUs), "hierarchical" (leaders), "nccl" (the
    faster of the ring and NCCL's double binary tree, per message size), or any other all-reduce
    registered with a cluster cost (:func:`commlab.arch.register_allreduce`)."""

    nodes: int
    gpus_per_node: int = 1
    intra: LinkModel | str = "PCIe3-mgwfbp"
    inter: LinkModel | str = "100GbIB-survey"
    allreduce: str = "ring"

    def __post_init__(self):
        checks.integer("nodes", self.nodes, where="Cluster", got=True)
        checks.integer("gpus_per_node", self.gpus_per_node, where="Cluster", got=True)
        object.__setattr__(self, "intra", link(self.intra))
        object.__setattr__(self, "inter", link(self.inter))
        valid = allreduce_names()
        if self.allreduce not in valid:
            raise ValueError(f"Cluster: allreduce={self.allreduce!r}; valid: {', '.join(valid)}")

    @classmethod
    def flat(cls, gpus: int, link="100GbIB-survey") -> "Cluster":
        """``gpus`` GPUs, one per node, all on one kind of link."""
        return cls(gpus, 1, inter=link)

    @property
    def gpus(self) -> int:
        """P = nodes x gpus_per_node."""
        return self.nodes * self.gpus_per_node

    def node_of(self, rank: int) -> int:
        """The node of ``rank``: rank // gpus_per_node."""
        return rank // self.gpus_per_node

    def links(self) -> list[LinkModel]:
        """The kinds of hop a ring through every GPU crosses."""
        return ([self.intra] if self.gpus_per_node > 1 else []) + ([self.inter] if self.nodes > 1 else [])

    def __str__(self) -> str:
        inside = f" x {self.gpus_per_node} GPUs on {self.intra.name}" if self.gpus_per_node > 1 else " x 1 GPU"
        return f"{self.nodes} node(s){inside}, {self.inter.name} between nodes ({self.gpus} GPUs, {self.allreduce})"
