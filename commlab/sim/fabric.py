"""Switch fabrics: a cluster as a graph of hosts, switches and full-duplex links, and its routes.

A :class:`Fabric` holds directed links (each cable is two, one per direction) with a capacity in
bytes per second, the hosts in rank order, and a per-message latency alpha (the endpoints'
start-up, as in the alpha-beta model; a flow's bytes then move at the rate the fabric gives it,
:mod:`commlab.sim.flows`). Builders:

* :func:`fat_tree` ``(k, link, oversubscription=1)``: the k-ary fat-tree of Al-Fares, Loukissas
  and Vahdat (SIGCOMM 2008): k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 core
  switches, k^3/4 hosts, every switch with k ports; non-blocking at ``oversubscription=1``. An
  oversubscription r >= 1 divides the capacity of each edge switch's uplinks by r (r:1 at the
  top of the rack, where clusters usually save).
* :func:`bcube` ``(n, k, link)``: BCube(n, k) (Guo et al., SIGCOMM 2009): n^(k+1) hosts, k+1
  levels of n^k switches with n ports; a host has a port on one switch of every level, and is
  linked to the hosts that differ from it in one digit (base n) through that level's switch.
* :func:`torus_2d` ``(a, b, link)``: a x b hosts wired to their four neighbours, no switches.

**Routing** (:meth:`Fabric.path`): a shortest path through switches (and through hosts only where
the fabric is server-centric, ``hosts_forward``: BCube, the torus), chosen hop by hop among the next hops that
keep it shortest (ECMP) by the destination's index, as the fat-tree's two-level routing spreads
traffic by the destination's host number: the first choice by its last digit (base the number of
choices), the next by the next digit, so an all-to-all spreads over every core switch; deterministic, so the same run gives the same times.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .. import checks
from ..net.link import get_link


@dataclass
class Fabric:
    """Hosts in rank order, switches, directed links with capacities (bytes/s) and the per-message alpha."""
    name: str
    hosts: list
    alpha: float
    hosts_forward: bool = False  # True where hosts relay traffic (BCube, a torus); switches always do
    capacity: dict = field(default_factory=dict)  # (u, v) -> bytes per second, one direction
    adjacency: dict = field(default_factory=dict)  # u -> [v, ...] in insertion order
    _dist: dict = field(default_factory=dict, repr=False)
    _host_set: set | None = field(default=None, repr=False)

    def connect(self, u, v, bytes_per_s: float) -> None:
        """A full-duplex cable between u and v: two directed links of ``bytes_per_s`` each."""
        for a, b in ((u, v), (v, u)):
            self.capacity[(a, b)] = bytes_per_s
            self.adjacency.setdefault(a, []).append(b)

    @property
    def switches(self) -> list:
        """Every node that is not a host, in insertion order."""
        hosts = set(self.hosts)
        return [n for n in self.adjacency if n not in hosts]

    def _relays(self, node) -> bool:
        if self._host_set is None:
            self._host_set = set(self.hosts)
        return self.hosts_forward or node not in self._host_set

    def _distances(self, dst) -> dict:
        """Hops from every node to ``dst`` (breadth-first, cached per destination)."""
        if dst not in self._dist:
            dist, queue = {dst: 0}, deque([dst])
            while queue:
                u = queue.popleft()
                if u != dst and not self._relays(u):
                    continue
                for v in self.adjacency.get(u, ()):
                    if v not in dist:
                        dist[v] = dist[u] + 1
                        queue.append(v)
            self._dist[dst] = dist
        return self._dist[dst]

    def path(self, src: int, dst: int) -> list[tuple]:
        """The directed links from host rank ``src`` to host rank ``dst`` (see the module doc)."""
        for r in (src, dst):
            if not (checks.is_int(r) and 0 <= r < len(self.hosts)):
                raise ValueError(f"{self.name}: host {r!r} is not a rank; valid: 0..{len(self.hosts) - 1}")
        a, b = self.hosts[src], self.hosts[dst]
        dist = self._distances(b)
        if a not in dist:
            raise ValueError(f"{self.name}: no route from host {src} to host {dst}")
        links, u, digits = [], a, dst
        while u != b:
            options = [v for v in self.adjacency[u] if dist.get(v) == dist[u] - 1 and (v == b or self._relays(v))]
            v = options[digits % len(options)]
            digits //= len(options)
            links.append((u, v))
            u = v
        return links


def _rate(link) -> tuple[float, float]:
    model = get_link(link)
    return model.alpha, 1.0 / model.beta


def fat_tree(k: int, link="100GbIB", oversubscription: float = 1.0) -> Fabric:
    """The k-ary fat-tree (k even): k^3/4 hosts; edge uplinks at capacity / oversubscription."""
    if not checks.is_int(k) or k < 2 or k % 2:
        raise ValueError(f"fat_tree: k={k!r} must be an even integer >= 2 (k-port switches; k^3/4 hosts)")
    oversubscription = checks.number("oversubscription", oversubscription, 1, where="fat_tree")  # 1: non-blocking
    alpha, cap = _rate(link)
    h = k // 2
    hosts = [("host", p, e, i) for p in range(k) for e in range(h) for i in range(h)]
    f = Fabric(f"fat-tree(k={k}, {oversubscription:g}:1)", hosts, alpha)
    for p in range(k):
        for e in range(h):
            for i in range(h):
                f.connect(("host", p, e, i), ("edge", p, e), cap)
            for a in range(h):
                f.connect(("edge", p, e), ("agg", p, a), cap / oversubscription)
        for a in range(h):
            for c in range(h):
                f.connect(("agg", p, a), ("core", a, c), cap)
    return f


def bcube(n: int, k: int, link="100GbIB") -> Fabric:
    """BCube(n, k): n^(k+1) hosts, k+1 levels of n^k n-port switches."""
    for name, v, low in (("n", n, 2), ("k", k, 0)):
        if not checks.is_int(v) or v < low:
            raise ValueError(f"bcube: {name}={v!r} must be an integer >= {low} (BCube(n, k) has n^(k+1) hosts)")
    alpha, cap = _rate(link)
    count = n ** (k + 1)
    hosts = [("host", i) for i in range(count)]
    f = Fabric(f"BCube({n}, {k})", hosts, alpha, hosts_forward=True)
    for level in range(k + 1):
        step = n ** level
        for i in range(count):
            digit = (i // step) % n
            switch = ("switch", level, i - digit * step)  # the hosts that differ only in this digit
            f.connect(("host", i), switch, cap)
    return f


def torus_2d(a: int, b: int, link="100GbIB") -> Fabric:
    """An a x b torus of hosts (rank r at row r // b, column r % b), each wired to 4 neighbours."""
    for name, v in (("a", a), ("b", b)):
        if not checks.is_int(v) or v < 3:
            raise ValueError(f"torus_2d: {name}={v!r} must be an integer >= 3 (a ring of at least 3 per dimension)")
    alpha, cap = _rate(link)
    hosts = [("host", r) for r in range(a * b)]
    f = Fabric(f"torus {a}x{b}", hosts, alpha, hosts_forward=True)
    for r in range(a * b):
        i, j = divmod(r, b)
        f.connect(("host", r), ("host", i * b + (j + 1) % b), cap)
        f.connect(("host", r), ("host", ((i + 1) % a) * b + j), cap)
    return f

