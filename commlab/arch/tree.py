"""Tree all-reduce: a pipelined binary tree, and the double binary tree.

Binary tree. The group's positions form a heap: position v has children 2v+1 and 2v+2 and
parent (v-1)//2, so the tree has depth h = floor(log2 p). The vector is cut into s segments.
Reduce: for each segment in turn, a node takes it from its children (left, then right), adds
them into its own, and passes the sum up. Broadcast: for each segment in turn, a node takes
it from its parent and passes it down, left child first. Segments make a pipeline: while the
root works on segment j, the level below already works on segment j+1.

With t = alpha + n/s beta the time of one segment, a node with two children takes in two
segments per 2t, so each phase lasts 2(s-1) t plus the time the first segment needs to
cross the tree (:func:`cost` has the exact count, with :func:`tree_fill`):

    T_tree = (4(s-1) + r(p) + d(p)) (alpha + n/s beta),   r(p) ~ d(p) ~ 2 log2 p,

for p >= 3 (two ranks are a single edge: 2 s t).

For large s this is about 4 n beta: twice the ring's bandwidth term, because an inner node
receives two copies of every byte and sends two. The latency term grows only with log p,
which is why trees win for small messages and many ranks.

Double binary tree (Sanders, Speck and Traeff 2009; NCCL 2.4). Two trees with the same
shape: tree A on positions 0..p-1 and tree B on the mirror image (position v in heap slot
p-1-v). A heap's inner nodes are its first floor(p/2) slots, so every position is an inner
node in at most one of the two trees and a leaf in the other. Each tree carries half the
vector in s segments. Per step a rank takes in at most two half-segments and sends at most
two, so the steady state costs 2 t' per step and phase, with t' = alpha + n/(2s) beta:

    T_double ~ (4 s + fill) (alpha + n/(2s) beta) ~ 2 n beta + 4 s alpha,

the ring's bandwidth term at logarithmic depth. A rank runs both trees in one program. Its
leaf-tree sends do not depend on anything, so they run h + 1 steps ahead of its inner-tree
work (and its leaf-tree receives h + 1 steps behind): were they in step, each tree would
wait for the other and the pipeline would slow down with depth. The fill of two pipelines
that share every rank's ports has no tidy closed form; :func:`double_tree_cost`
times this schedule message by message instead.

Reduce and broadcast run one after the other here; NCCL overlaps them (the root sends a
segment down as soon as it is summed), which keeps more links busy at once. The schedule
is data: :func:`program` lists one rank's messages, the all-reduce runs it (:func:`_run`),
and :func:`schedules` hands all ranks' lists to ``commlab.net.clock.replay`` (that is how
:func:`double_tree_cost` times it).
"""
from __future__ import annotations

import functools

import torch

from .. import checks
from ..net.clock import Network, replay
from ..net.cost import check_ranks
from ..net.link import LinkModel, get_link
from .chunks import absorb, incoming, members, split, wait_all, workspace
from .ring import check_segments

DEPTH = 2  # receives posted ahead on each stream


def heap(p: int, v: int, mirror: bool = False) -> tuple[int | None, list[int]]:
    """Parent and children (left, right) of position v in the heap on p positions; with
    mirror=True, of the tree where position v sits in heap slot p-1-v."""
    at = (lambda u: p - 1 - u) if mirror else (lambda u: u)
    u = at(v)
    parent = at((u - 1) // 2) if u else None
    return parent, [at(c) for c in (2 * u + 1, 2 * u + 2) if c < p]


def program(trees, s: int, ahead: int):
    """One rank's schedule: (reduce, broadcast), two lists of (kind, tree, peer, segment) with
    kind "send", "add" (receive and reduce into the segment) or "copy" (receive into it).

    trees: this rank's (parent, children) in each tree (one tree, or two for the double tree).
    Leaf-tree sends run ``ahead`` steps before the inner-tree work, leaf-tree receives as many
    steps behind it."""
    leaf = [t for t, (_, kids) in enumerate(trees) if not kids]
    inner = [t for t, (_, kids) in enumerate(trees) if kids]
    up, down = [], []
    for j in range(s):
        for t in leaf:
            up += [("send", t, trees[t][0], k) for k in (range(ahead + 1) if j == 0 else [j + ahead]) if k < s]
        for t in inner:
            parent, kids = trees[t]
            up += [("add", t, c, j) for c in kids] + ([("send", t, parent, j)] if parent is not None else [])
            down += ([("copy", t, parent, j)] if parent is not None else []) + [("send", t, c, j) for c in kids]
        if j >= ahead:
            down += [("copy", t, trees[t][0], j - ahead) for t in leaf]
    down += [("copy", t, trees[t][0], k) for k in range(max(0, s - ahead), s) for t in leaf]
    return up, down


def _trees(p: int, i: int, double: bool):
    return [heap(p, i), heap(p, i, mirror=True)] if double else [heap(p, i)]


def _ahead(p: int) -> int:
    return p.bit_length()  # depth of the heap + 1


def schedules(n: float, p: int, segments: int, double: bool):
    """Every position's messages as (kind, peer, tag, nbytes), kind "send" or "recv", in its
    program order: what ``commlab.net.clock.replay`` needs to time the all-reduce."""
    seg_bytes = n / (2 * segments if double else segments)
    out = []
    for i in range(p):
        ops = [op for phase in program(_trees(p, i, double), segments, _ahead(p)) for op in phase] if p > 1 else []
        out.append([("send" if kind == "send" else "recv", peer, t, seg_bytes) for kind, t, peer, _ in ops])
    return out


def _run(comm, ranks, phases, parts, op, tag):
    """Run a rank's schedule on ``parts`` (per tree, its list of segments)."""
    for phase in phases:
        streams = {}
        for key in dict.fromkeys((t, peer) for kind, t, peer, _ in phase if kind != "send"):
            ops = [(kind, j) for kind, t, peer, j in phase if (t, peer) == key]
            streams[key] = incoming(comm, ranks[key[1]], _landing(comm, parts[key[0]], ops, key), tag + key[0], DEPTH)
        sends = []
        for kind, t, peer, j in phase:
            if kind == "send":
                sends.append(comm.isend(parts[t][j], ranks[peer], tag + t))
            else:
                absorb(comm, next(streams[(t, peer)]), ranks[peer], parts[t][j], op if kind == "add" else None)
        wait_all(sends)  # the broadcast writes into the segments the reduce sent


def _landing(comm, segs, ops, stream):
    """Where each received segment lands: in place for a copy; for a sum, in one of DEPTH + 1
    scratch buffers of this stream, taken in turn (one is free again once its sum is done)."""
    size = max(s.numel() for s in segs)
    scratch = [workspace(comm, segs[0], size, ("tree", stream, k)) for k in range(DEPTH + 1)]
    return [segs[j] if kind == "copy" else scratch[m % (DEPTH + 1)][:segs[j].numel()]
            for m, (kind, j) in enumerate(ops)]


def _allreduce(comm, x, op, ranks, segments, tag, double):
    if not checks.is_int(segments) or segments < 1:
        raise ValueError(f"segments must be an integer >= 1, got {segments!r}")
    ranks, i = members(comm, ranks)
    p = len(ranks)
    if p > 1:
        parts = [split(h, segments) for h in split(x, 2)] if double else [split(x, segments)]
        _run(comm, ranks, program(_trees(p, i, double), segments, _ahead(p)), parts, op, tag)
    return x


def allreduce(comm, x: torch.Tensor, op: str = "sum", ranks=None, segments: int = 4, tag: int = 0) -> torch.Tensor:
    """Pipelined binary-tree all-reduce of the flat tensor ``x`` in place, in ``segments`` segments."""
    return _allreduce(comm, x, op, ranks, segments, tag, double=False)


def double_tree_allreduce(comm, x: torch.Tensor, op: str = "sum", ranks=None, segments: int = 4,
                          tag: int = 0) -> torch.Tensor:
    """Double binary tree all-reduce of ``x`` in place: each half of x on its own tree (tags
    ``tag`` and ``tag + 1``), in ``segments`` segments each."""
    return _allreduce(comm, x, op, ranks, segments, tag, double=True)


# ----- closed forms ----------------------------------------------------------------------------
def tree_fill(p: int) -> tuple[int, int]:
    """(r, d): message times the first segment needs to climb the heap of p ranks in the
    reduce (r = 2h, or 2h - 1 when p = 2^h: the deepest node is an only child), and to come
    down it in the broadcast (d = max over v = 1..p of bitlen(v) + popcount(v) - 2: 1 per left
    edge, 2 per right), with h = floor(log2 p)."""
    check_ranks(p)
    h = p.bit_length() - 1
    r = 2 * h - (p == 1 << h)
    d = max(v.bit_length() + bin(v).count("1") - 2 for v in range(1, p + 1))
    return r, d


def cost(n: float, p: int, link, segments: int = 4) -> float:
    """Closed-form seconds of the pipelined binary tree: (4 (s - 1) + r(p) + d(p)) T(n / s)
    for p >= 3 (:func:`tree_fill`), 2 s T(n / s) for p = 2."""
    check_ranks(p)
    check_segments(segments)
    t = get_link(link).time(n / segments)
    if p <= 2:  # a single edge: one segment per message time each way
        return 2 * segments * t * (p - 1)
    r, d = tree_fill(p)
    return (4 * (segments - 1) + r + d) * t


def double_tree_cost(n: float, p: int, link, segments: int = 4) -> float:
    """Seconds of the double binary tree, each half in ``segments`` segments: its schedule,
    timed by the clock's rules message by message (about (4 s + O(log p)) T(n / 2s))."""
    check_ranks(p)
    check_segments(segments)
    return _double_tree_units(p, segments) * get_link(link).time(n / (2 * segments))


@functools.lru_cache(maxsize=None)
def _double_tree_units(p: int, segments: int) -> float:
    """The double tree's time in message times. Every message of its schedule carries n/(2s)
    bytes and the clock only adds message times and takes maxima, so the replayed schedule
    lasts a whole number K of message times alpha + n/(2s) beta: K is its time on a link with
    alpha = 1 and beta = 0, replayed once per (p, s)."""
    return max(replay(schedules(0.0, p, segments, double=True), Network(LinkModel(1.0, 0.0))))
