"""Gossip topologies: who averages with whom, and how fast that reaches the mean.

A topology is an undirected graph on n nodes. Gossip mixes with the Metropolis-Hastings
weights (Xiao and Boyd 2004; Boyd, Ghosh, Prabhakar and Shah 2006)::

    W_ij = 1 / (1 + max(d_i, d_j))   for every edge {i, j}      (d_i: degree of node i)
    W_ii = 1 - sum_{j != i} W_ij

W is symmetric and doubly stochastic, so x <- W x keeps the mean, and on a connected graph
||x_t - mean|| <= lambda^t ||x_0 - mean|| with lambda = max(|lambda_2|, |lambda_n|) (the
eigenvalues of W, lambda_1 = 1). The spectral gap 1 - lambda says how fast consensus comes:
about 1 / gap steps per factor e. With these weights:

    complete     1                                  (W = J/n: one step reaches the mean)
    ring         (2/3)(1 - cos(2 pi / n)) ~ 4 pi^2 / (3 n^2)       (n >= 3)
    torus r x c  (2/5)(1 - cos(2 pi / max(r, c)))                  (r, c >= 3)
    hypercube    2 / (log2 n + 1)
    star         1 / n                                             (n >= 3)
    exponential  2 / log2 n for n = 2^k >= 4, at degree 2 log2 n - 1 (Theta(1 / log n) for every n;
                 Assran et al. 2019, Ying et al. 2021)

The exponential graph joins i to i +- 2^k (mod n): the undirected version of the graphs of
Assran et al. 2019 and Ying et al. 2021 (theirs are directed, i -> i + 2^k), so that
Metropolis-Hastings weights make W symmetric. A random d-regular graph is drawn by the
pairing method of Steger and Wormald (1999), seeded, redrawn until connected.

``Topology.schedule`` orders each node's sends and receives so that one gossip step costs
max_degree * T(n) on the simulated clock (:func:`commlab.decentral.gossip.cost`): a proper
edge colouring of the directed edges with max_degree colours (Koenig's theorem: a bipartite
graph, here senders x receivers, needs no more colours than its largest degree). In round c
every node sends at most one message and receives at most one.
"""
from __future__ import annotations

import math
import random
from functools import cached_property

import numpy as np

from .. import checks
from ..spec import parse_one


class Topology:
    """An undirected graph on nodes 0..n-1 with its gossip weights."""

    def __init__(self, name: str, neighbors):
        self.name = name
        self.neighbors = tuple(tuple(sorted(set(int(j) for j in nb))) for nb in neighbors)
        self.n = len(self.neighbors)
        for i, nb in enumerate(self.neighbors):
            for j in nb:
                if j == i or not 0 <= j < self.n or i not in self.neighbors[j]:
                    raise ValueError(f"{name}: neighbour lists must be symmetric, without self loops "
                                     f"(node {i} lists {j})")

    @property
    def degrees(self) -> list[int]:
        """Each node's number of neighbours."""
        return [len(nb) for nb in self.neighbors]

    @property
    def max_degree(self) -> int:
        """The largest degree (0 for a graph without edges)."""
        return max(self.degrees, default=0)

    def weights(self, i: int) -> tuple[float, dict[int, float]]:
        """Row i of W: (W_ii, {j: W_ij} over the neighbours j)."""
        d = self.degrees
        out = {j: 1.0 / (1 + max(d[i], d[j])) for j in self.neighbors[i]}
        return 1.0 - sum(out.values()), out

    def mixing_matrix(self) -> np.ndarray:
        """W as an n x n float64 array (Metropolis-Hastings weights)."""
        w = np.zeros((self.n, self.n))
        for i in range(self.n):
            w[i, i], row = self.weights(i)
            for j, v in row.items():
                w[i, j] = v
        return w

    def spectral_gap(self) -> float:
        """1 - max(|lambda_2|, |lambda_n|) of W (1 for a single node; 0 when disconnected)."""
        if self.n == 1:
            return 1.0
        ev = np.linalg.eigvalsh(self.mixing_matrix())  # ascending; ev[-1] = 1
        return float(1.0 - np.abs(ev[:-1]).max())

    @cached_property
    def rounds(self) -> list[dict[int, int]]:
        """max_degree rounds of {sender: receiver}: every directed edge in exactly one round,
        and in a round every node sends at most once and receives at most once. Built edge by
        edge; when the colour free at the sender is taken at the receiver, the two colours are
        swapped along their alternating path from the receiver (Koenig's proof)."""
        colours = range(self.max_degree)
        out = [dict() for _ in range(self.n)]  # per sender: colour -> receiver
        inn = [dict() for _ in range(self.n)]  # per receiver: colour -> sender
        for u in range(self.n):
            for v in self.neighbors[u]:
                a = next(c for c in colours if c not in out[u])
                b = next(c for c in colours if c not in inn[v])
                # the path v -a- sender -b- receiver -a- ...; a + b - c is the other colour
                path, x, c, at_receiver = [], v, a, True
                while c in (inn if at_receiver else out)[x]:
                    y = (inn if at_receiver else out)[x][c]
                    path.append((y, x, c) if at_receiver else (x, y, c))
                    x, c, at_receiver = y, a + b - c, not at_receiver
                for s, r, c in path:
                    del out[s][c], inn[r][c]
                for s, r, c in path:
                    out[s][a + b - c], inn[r][a + b - c] = r, s
                out[u][a], inn[v][a] = v, u
        return [{u: out[u][c] for u in range(self.n) if c in out[u]} for c in colours]

    @property
    def schedule(self) -> tuple[list[list[int]], list[list[int]]]:
        """(sends, receives): each node's neighbours in the order it sends to them and the
        order it receives from them, round by round."""
        sends = [[] for _ in range(self.n)]
        receives = [[] for _ in range(self.n)]
        for rnd in self.rounds:
            for u, v in rnd.items():
                sends[u].append(v)
                receives[v].append(u)
        return sends, receives

    def is_connected(self) -> bool:
        """Whether every node is reachable from node 0."""
        seen, todo = {0}, [0]
        while todo:
            for j in self.neighbors[todo.pop()]:
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        return len(seen) == self.n

    def __repr__(self) -> str:
        return f"Topology({self.name!r}, n={self.n}, degrees {min(self.degrees, default=0)}..{self.max_degree})"


# ----- the graphs --------------------------------------------------------------------------
def _circulant(name: str, n: int, offsets) -> Topology:
    return Topology(name, [{(i + o) % n for o in offsets} - {i} for i in range(n)])


def ring(n: int) -> Topology:
    """The ring on n nodes: node i talks to i - 1 and i + 1 (mod n)."""
    return _circulant("ring", n, (1, -1))


def complete(n: int) -> Topology:
    """The complete graph on n nodes: every node talks to every other."""
    return Topology("complete", [set(range(n)) - {i} for i in range(n)])


def star(n: int) -> Topology:
    """Node 0 in the middle, joined to every other node."""
    return Topology("star", [set(range(1, n))] + [{0}] * (n - 1))


def exponential(n: int) -> Topology:
    """i joined to i +- 2^k (mod n) for every 2^k < n."""
    return _circulant("exponential", n, [s * 2 ** k for k in range(max(n - 1, 1).bit_length()) for s in (1, -1)])


def hypercube(n: int) -> Topology:
    """n = 2^k nodes; i joined to i with one bit flipped."""
    if n & (n - 1):
        lo = 1 << (n.bit_length() - 1)
        raise ValueError(f"a hypercube needs a power of two nodes, got n={n}; valid sizes near it: {lo}, {2 * lo}")
    return Topology("hypercube", [{i ^ (1 << b) for b in range(n.bit_length() - 1)} for i in range(n)])


def torus(n: int, rows: int | None = None) -> Topology:
    """A rows x cols grid with wrap-around; rows defaults to the largest factor <= sqrt(n)."""
    if rows is None:
        rows = max((r for r in range(2, math.isqrt(n) + 1) if n % r == 0), default=None)
    if rows is None or not 2 <= rows <= n // 2 or n % rows:
        sizes = [m for m in range(4, max(n, 16) + 5) if any(m % r == 0 for r in range(2, math.isqrt(m) + 1))]
        near = sorted(sizes, key=lambda m: (abs(m - n), m))[:4]
        how = f"rows={rows} does not divide it into rows, cols >= 2" if rows is not None else "it has no such factors"
        raise ValueError(f"a 2-D torus needs n = rows x cols with rows, cols >= 2; n={n}: {how}; "
                         f"valid sizes near it: {', '.join(map(str, sorted(near)))}")
    cols = n // rows

    def node(a, b):
        return (a % rows) * cols + b % cols

    return Topology(f"torus({rows}x{cols})", [{node(a + 1, b), node(a - 1, b), node(a, b + 1), node(a, b - 1)} - {i}
                                              for i, (a, b) in enumerate((i // cols, i % cols) for i in range(n))])


def random_regular(n: int, d: int = 3, seed: int = 0) -> Topology:
    """A random connected d-regular graph (Steger and Wormald's pairing), drawn from ``seed``."""
    if not checks.is_int(d) or not 1 <= d < n or n * d % 2:
        raise ValueError(f"a d-regular graph on n nodes needs 1 <= d < n and n*d even; got n={n}, d={d}; "
                         f"valid d for n={n}: {', '.join(str(k) for k in range(1, n) if n * k % 2 == 0) or 'none'}")
    if d == 1 and n > 2:
        raise ValueError(f"a 1-regular graph on n={n} > 2 nodes is a set of pairs, never connected; use d >= 2")
    rng = random.Random(seed)
    if d == n - 1:
        return Topology(f"random_regular(d={d})", complete(n).neighbors)
    if d == 2:  # the connected 2-regular graphs are the rings: one through a random order
        order = list(range(n))
        rng.shuffle(order)
        at = {v: k for k, v in enumerate(order)}
        return Topology("random_regular(d=2)", [{order[(at[i] + 1) % n], order[at[i] - 1]} for i in range(n)])
    for _ in range(1000):
        adj = _pairing(n, d, rng)
        if adj is not None:
            top = Topology(f"random_regular(d={d})", adj)
            if top.is_connected():
                return top
    raise RuntimeError(f"could not draw a connected {d}-regular graph on {n} nodes")


def _pairing(n: int, d: int, rng: random.Random):
    """Pair up d stubs per node at random, never a loop or a double edge; None if stuck."""
    stubs = [v for v in range(n) for _ in range(d)]
    adj = [set() for _ in range(n)]
    while stubs:
        for _ in range(100):
            a, b = rng.sample(range(len(stubs)), 2)
            u, v = stubs[a], stubs[b]
            if u != v and v not in adj[u]:
                break
        else:
            return None
        adj[u].add(v)
        adj[v].add(u)
        for k in sorted((a, b), reverse=True):
            stubs[k] = stubs[-1]
            stubs.pop()
    return adj


TOPOLOGIES = {"ring": ring, "torus": torus, "hypercube": hypercube, "exponential": exponential,
              "complete": complete, "star": star, "random_regular": random_regular}


def get(spec, n: int, **kw) -> Topology:
    """A topology on ``n`` nodes from a name or spec: "ring", "torus(rows=2)",
    "random_regular(d=4, seed=1)", or a Topology (checked to have n nodes)."""
    if not checks.is_int(n) or n < 1:
        raise ValueError(f"a topology needs n >= 1 nodes, got {n!r}")
    if isinstance(spec, Topology):
        if spec.n != n:
            raise ValueError(f"topology {spec!r} has {spec.n} nodes, not {n}")
        return spec
    s = parse(spec)
    try:
        return TOPOLOGIES[s.name](n, *s.args, **{**kw, **s.kwargs})
    except TypeError as e:
        raise ValueError(f"bad arguments for topology {str(s)!r}: {e}") from None


def parse(spec: str):
    """Read a topology spec (a :class:`commlab.spec.Spec`); an unknown name lists the valid ones."""
    s = parse_one(spec)
    if s.name not in TOPOLOGIES:
        raise ValueError(f"unknown topology {s.name!r}; valid: {', '.join(TOPOLOGIES)}")
    return s
