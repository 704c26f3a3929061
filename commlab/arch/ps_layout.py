"""Where a parameter server's workers and servers live: W workers and S server shards, the
servers as extra ranks W..W+S-1 or co-located on worker ranks 0..S-1 (see :mod:`commlab.arch.ps`)."""
from __future__ import annotations

from dataclasses import dataclass

import torch


def check_count(what: str, v) -> None:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"parameter server needs {what} to be an integer >= 1, got {v!r}")


@dataclass(frozen=True)
class Layout:
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
        return self.workers if self.colocated else self.workers + self.shards

    def server_rank(self, shard: int) -> int:
        return shard if self.colocated else self.workers + shard

    def shard_of(self, rank: int):
        """The shard a rank serves, or None."""
        s = rank if self.colocated else rank - self.workers
        return s if 0 <= s < self.shards else None

    def pieces(self, flat: torch.Tensor) -> tuple:
        if flat.dim() != 1 or flat.numel() < self.shards:
            raise ValueError(f"cannot split {tuple(flat.shape)} into {self.shards} shards: "
                             "need a 1-D vector with at least one element per shard")
        return flat.tensor_split(self.shards)

    def check_world(self, comm) -> None:
        if comm.world_size != self.world_size:
            raise ValueError(f"a parameter server with {self.describe()} needs {self.world_size} ranks; "
                             f"this run has {comm.world_size}")

    def describe(self) -> str:
        if self.colocated:
            return f"{self.workers} workers on ranks 0..{self.workers - 1}, servers co-located on 0..{self.shards - 1}"
        return (f"{self.workers} workers on ranks 0..{self.workers - 1}, {self.shards} server(s) on ranks "
                f"{self.workers}..{self.workers + self.shards - 1}")
