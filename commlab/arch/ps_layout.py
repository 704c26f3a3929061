"""Where a parameter server's workers and servers live: W workers and S server shards, the
servers as extra ranks W..W+S-1 or co-located on worker ranks 0..S-1 (see :mod:`commlab.arch.ps`);
and the closed-form time of one BSP push/pull in each layout, T(m) = alpha + m beta, n bytes:

* single server:   2 p T(n)                   (p pushes into one server, p pulls out)
* S shards:        2 max(p, S) T(n/S) for p >= 2 workers; (S + 1) T(n/S) for one. The schedule
  is staggered: worker w sends its j-th piece to shard (w + j) mod S, shard s returns its i-th
  piece to worker (s + i) mod p, and every rank takes its messages in the order they leave. A
  shard's link takes p pieces in and then p out; a worker's sends S pieces and takes S back. A
  lone worker's pieces come back pipelined, each as soon as its shard has it. Without the
  stagger, every worker starting at shard 0, it takes (2p + S - 1) T(n/S).
* co-located:      2 (p - 1) T(n/S)            (S <= p; server s on worker rank s, BytePS; the
  same stagger, a worker's piece of its own shard stays local. Each server takes p - 1 pieces
  in by (p - 1) T, then sends p - 1 back; S = p is an all-to-all reduce-scatter plus all-gather,
  with the ring's cost; S = 1 is the naive all-reduce.)
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import checks
from ..net.cost import check_ranks
from ..net.link import get_link


def check_count(what: str, v) -> None:
    """ValueError unless ``v`` is an integer >= 1 (a count of workers or shards)."""
    if not checks.is_int(v) or v < 1:
        raise ValueError(f"parameter server needs {what} to be an integer >= 1, got {v!r}")


@dataclass(frozen=True)
class ServerPlacement:
    """W workers and S servers on ranks: servers as extra ranks W..W+S-1, or co-located on 0..S-1."""

    workers: int
    shards: int = 1
    colocated: bool = False

    def __post_init__(self):
        check_count("workers", self.workers)
        check_count("shards", self.shards)
        if self.colocated and self.shards > self.workers:
            raise ValueError(f"co-located servers live on worker ranks: shards={self.shards} > workers="
                             f"{self.workers}; use shards <= workers, or colocated=False for extra server ranks")

    @property
    def world_size(self) -> int:
        """Ranks in all: W co-located, W + S with servers on extra ranks."""
        return self.workers if self.colocated else self.workers + self.shards

    def server_rank(self, shard: int) -> int:
        """The rank that serves ``shard``: the shard itself co-located, else W + shard."""
        return shard if self.colocated else self.workers + shard

    def shard_of(self, rank: int):
        """The shard a rank serves, or None."""
        s = rank if self.colocated else rank - self.workers
        return s if 0 <= s < self.shards else None

    def pieces(self, flat: torch.Tensor) -> tuple:
        """The flat vector split into S near-equal pieces (``tensor_split``), one per shard."""
        if flat.dim() != 1 or flat.numel() < self.shards:
            raise ValueError(f"cannot split {tuple(flat.shape)} into {self.shards} shards: "
                             "need a 1-D vector with at least one element per shard")
        return flat.tensor_split(self.shards)

    def check_world(self, comm) -> None:
        """ValueError unless ``comm`` has exactly this layout's world size."""
        if comm.world_size != self.world_size:
            raise ValueError(f"a parameter server with {self.describe()} needs {self.world_size} ranks; "
                             f"this run has {comm.world_size}")

    def describe(self) -> str:
        """Words saying which ranks are workers and which serve."""
        if self.colocated:
            return f"{self.workers} workers on ranks 0..{self.workers - 1}, servers co-located on 0..{self.shards - 1}"
        return (f"{self.workers} workers on ranks 0..{self.workers - 1}, {self.shards} server(s) on ranks "
                f"{self.workers}..{self.workers + self.shards - 1}")


def ps_single(n: float, workers: int, link) -> float:
    """One server: 2 p T(n)."""
    check_ranks(workers)
    return 2 * workers * get_link(link).time(n)


def ps_sharded(n: float, workers: int, shards: int, link) -> float:
    """Push n bytes from each worker into S shards and pull them back, staggered (see above)."""
    check_ranks(workers)
    check_ranks(shards)
    piece = get_link(link).time(n / shards)
    if workers == 1:  # nothing to wait for: each piece returns as soon as its shard has it
        return (shards + 1) * piece
    return 2 * max(workers, shards) * piece


def ps_colocated(n: float, workers: int, shards: int, link) -> float:
    """Push and pull with server s on worker rank s (S <= p), staggered (see above)."""
    check_ranks(workers)
    check_ranks(shards)
    if shards > workers:
        raise ValueError(f"co-located servers need shards <= workers, got shards={shards}, workers={workers}")
    return 2 * (workers - 1) * get_link(link).time(n / shards)
