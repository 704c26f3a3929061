"""A 3D layout: ``dp`` data-parallel replicas x ``pp`` pipeline stages x ``tp`` tensor-parallel ranks.

``Layout.parse("dp=2,tp=2,pp=2")`` (a missing degree is 1; optional ``micro_batches=4``,
``schedule=1f1b`` or ``gpipe``, and ``sequence_parallel=1``). Ranks are numbered as Megatron-LM numbers
them (Narayanan et al., SC'21): tensor-parallel ranks fastest, then data-parallel, then pipeline,

    rank = t + tp * (d + dp * s)        (t: TP index, d: DP replica, s: pipeline stage)

so the tp ranks of a stage are neighbours (one node, on NVLink, where its two all-reduces per layer
per direction belong), and each stage's dp replicas are the next neighbours. Each rank belongs to
three groups (:class:`~commlab.parallel.group.Group`): the ``tp`` ranks with its (d, s), the ``dp``
ranks with its (t, s) (they all-reduce the gradients of the same shard), the ``pp`` ranks with its
(t, d) (they pass activations forward and gradients back). Two ranks differ in one coordinate for
at most one of the three, and each group kind has its own tag.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from .group import Group
from .pipeline import SCHEDULES

TAGS = {"tp": 1100, "dp": 1200, "pp": 1300}
DEGREES = ("dp", "tp", "pp")
OPTIONS = DEGREES + ("micro_batches", "schedule", "sequence_parallel")


def divisors(n: int) -> list[int]:
    """Every k in 1..n that divides n."""
    return [k for k in range(1, n + 1) if n % k == 0]


@dataclass(frozen=True)
class Layout:
    """dp x tp x pp ranks with micro-batches, the pipeline schedule and sequence parallelism; checked on
    construction (Megatron-LM's rank order)."""
    dp: int = 1
    tp: int = 1
    pp: int = 1
    micro_batches: int = 1
    schedule: str = "1f1b"
    sequence_parallel: bool = False

    def __post_init__(self):
        for name in DEGREES + ("micro_batches",):
            v = getattr(self, name)
            checks.integer(name, v, where="parallel layout")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"parallel layout: schedule={self.schedule!r} is not known; valid: "
                             f"{', '.join(SCHEDULES)}")

    @classmethod
    def parse(cls, spec) -> "Layout":
        """A Layout from "dp=2,tp=2,pp=2[,micro_batches=4][,schedule=gpipe][,sequence_parallel=1]"."""
        if isinstance(spec, Layout):
            return spec
        if not isinstance(spec, str) or not spec.strip():
            raise ValueError(f"parallel={spec!r}: give a layout such as 'dp=2,tp=2,pp=2'")
        kw = {}
        for part in spec.replace(" ", "").split(","):
            key, eq, value = part.partition("=")
            if not eq or key not in OPTIONS:
                raise ValueError(f"parallel={spec!r}: {part!r} is not an option; valid: "
                                 f"{', '.join(k + '=...' for k in OPTIONS)}")
            if key in kw:
                raise ValueError(f"parallel={spec!r} gives {key} twice")
            if key == "schedule":
                kw[key] = value.strip("'\"")
            elif key == "sequence_parallel":
                if value not in ("0", "1", "True", "False"):
                    raise ValueError(f"parallel={spec!r}: sequence_parallel={value!r}; valid: 0, 1")
                kw[key] = value in ("1", "True")
            else:
                try:
                    kw[key] = int(value)
                except ValueError:
                    raise ValueError(f"parallel={spec!r}: {key}={value!r} must be an integer >= 1") from None
        return cls(**kw)

    @property
    def world(self) -> int:
        """Ranks in all: dp * tp * pp."""
        return self.dp * self.tp * self.pp

    def coords(self, rank: int) -> tuple[int, int, int]:
        """(d, t, s): data-parallel replica, tensor-parallel index, pipeline stage of ``rank``."""
        t, rest = rank % self.tp, rank // self.tp
        return rest % self.dp, t, rest // self.dp

    def rank(self, d: int, t: int, s: int) -> int:
        """The global rank of TP index t in replica d of stage s: t + tp (d + dp s)."""
        return t + self.tp * (d + self.dp * s)

    def members(self, rank: int, kind: str) -> list[int]:
        """The global ranks of ``rank``'s ``kind`` group ("tp", "dp" or "pp"), in group order."""
        d, t, s = self.coords(rank)
        if kind == "tp":
            return [self.rank(d, k, s) for k in range(self.tp)]
        if kind == "dp":
            return [self.rank(k, t, s) for k in range(self.dp)]
        if kind == "pp":
            return [self.rank(d, t, k) for k in range(self.pp)]
        raise ValueError(f"group kind {kind!r} is not known; valid: tp, dp, pp")

    def groups(self, comm) -> dict[str, Group]:
        """This rank's three groups, by kind."""
        return {kind: Group(comm, self.members(comm.rank, kind), TAGS[kind]) for kind in TAGS}

    def check(self, workers: int, *, layers: int, heads: int, hidden: int, ffn: int, seq: int | None = None,
              batch_size: int | None = None) -> "Layout":
        """Refuse a layout the model or the run cannot take, naming the valid choices."""
        if self.world != workers:
            raise ValueError(f"parallel layout dp*tp*pp = {self.dp}*{self.tp}*{self.pp} = {self.world} must equal "
                             f"workers={workers}")
        valid_tp = [k for k in divisors(heads) if hidden % k == 0 and ffn % k == 0]
        if self.tp not in valid_tp:
            raise ValueError(f"tp={self.tp} must divide the {heads} attention heads, the hidden size {hidden} and "
                             f"the MLP's {ffn}; valid tp: {', '.join(map(str, valid_tp))}")
        if self.pp > layers:
            raise ValueError(f"pp={self.pp} is larger than the model's {layers} layers; valid pp: 1..{layers}")
        if self.sequence_parallel and seq is not None and seq % self.tp:
            raise ValueError(f"sequence_parallel cuts the {seq} positions over tp={self.tp} ranks; valid tp: "
                             f"{', '.join(str(k) for k in valid_tp if seq % k == 0)}")
        if batch_size is not None and batch_size < self.micro_batches:
            raise ValueError(f"micro_batches={self.micro_batches} is more than batch_size={batch_size}; valid: "
                             f"1..{batch_size}")
        return self

    def __str__(self) -> str:
        extra = "" if self.micro_batches == 1 else f",micro_batches={self.micro_batches}"
        extra += "" if self.schedule == "1f1b" else f",schedule={self.schedule}"
        extra += ",sequence_parallel=1" if self.sequence_parallel else ""
        return f"dp={self.dp},tp={self.tp},pp={self.pp}{extra}"
