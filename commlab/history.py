"""What a training run records, step by step, and how to look at it."""
from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field

import numpy as np
import torch

# columns that the same seed must reproduce exactly (wall time is the only one that may not)
DETERMINISTIC = ("loss", "test_accuracy", "test_loss", "sim_time", "bytes_sent", "bytes_recv",
                 "server_bytes_sent", "server_bytes_recv", "samples", "staleness", "dropped", "worker_time",
                 "applied", "consensus")


DIVERGED_LOSS = 1e4  # a cross-entropy this large means the models have blown up


class Diverged(FloatingPointError):
    """A run whose models blew up (NaN/Inf, or an exploding loss): it names the rule, the step
    and the worker, instead of returning a History of NaNs."""

    def __init__(self, rule: str, step: int, worker: int, why: str = ""):
        self.rule, self.step, self.worker = rule, int(step), int(worker)
        super().__init__(f"{rule} diverged at step {step} on worker {worker}" + (f": {why}" if why else ""))

    def __reduce__(self):  # survives pickling between processes
        return type(self), (self.rule, self.step, self.worker, str(self).partition(": ")[2])

    @classmethod
    def from_message(cls, text: str) -> "Diverged | None":
        """The Diverged a rank's error message reports (a Gloo rank's error arrives as text), or None."""
        m = re.search(r"(\w+) diverged at step (\d+) on worker (\d+)(?:: (.*))?", text)
        return None if m is None else cls(m[1], int(m[2]), int(m[3]), (m[4] or "").split("\n")[0])


def check_health(rule: str, step: int, worker: int, loss: float, tensors=(), trained: bool = True) -> None:
    """Raise :class:`Diverged` naming ``rule``, ``step`` and ``worker`` if the worker's ``loss`` is
    NaN, infinite or above :data:`DIVERGED_LOSS`, or one of ``tensors`` (its model) holds a NaN or
    an Inf. ``trained=False``: the worker took no step (a client FedAvg left out), so its NaN
    loss means nothing. Cost: one max per tensor and one host sync."""
    why = None
    if math.isnan(loss) and trained or math.isinf(loss) or loss > DIVERGED_LOSS:
        why = f"loss {loss:g}" + ("" if math.isnan(loss) else f" (above {DIVERGED_LOSS:g})")
    else:
        tensors = [t.detach() for t in tensors if t.numel()]
        if tensors and not bool(torch.isfinite(torch.stack([t.abs().amax().float() for t in tensors])).all()):
            why = "a NaN or an Inf in its model" + ("" if math.isfinite(loss) else f" (loss {loss})")
    if why is not None:
        raise Diverged(rule, step, worker, why + "; lower lr")


@dataclass
class History:
    """Per-step records of a run.

    loss: training loss averaged over workers; test_accuracy / test_loss: measured every
    ``eval_every`` steps (NaN in between); sim_time: simulated seconds at the end of the
    step (slowest rank; NaN without a network model); worker_time: per step, each worker's own
    simulated clock at the end of its step (under asynchronous rules fast workers finish
    their steps before a straggler); wall_time: real seconds since the
    start of training; bytes_sent / bytes_recv: per step, one list entry per worker;
    server_bytes_sent / server_bytes_recv: whole-run totals of each parameter server rank;
    samples: training samples used in the step, all workers together; staleness: per step,
    one entry per worker: the updates made to the model between the worker's read of it and
    the application of its gradient (None: dropped), recorded by parameter-server and Hogwild
    runs (empty otherwise); dropped: per step, the gradients dropped (backup workers);
    applied: the parameter server's log (its first shard), (worker, worker's step, staleness)
    for every applied gradient, in the order applied; timeline: a scheduled run's messages on
    rank 0, one dict per message (step, message, layers, bytes, the simulated ready, start and
    end seconds, and the wall seconds since the step began; :mod:`commlab.schedule.engine`);
    consensus: per step, the decentralized workers' consensus distance (1/n) sum_i ||x_i - x_bar||^2
    (:mod:`commlab.decentral`; empty for other rules), whose test columns then measure x_bar.
    """

    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    test_accuracy: list[float] = field(default_factory=list)
    test_loss: list[float] = field(default_factory=list)
    sim_time: list[float] = field(default_factory=list)
    wall_time: list[float] = field(default_factory=list)
    bytes_sent: list[list[int]] = field(default_factory=list)
    bytes_recv: list[list[int]] = field(default_factory=list)
    server_bytes_sent: list[int] = field(default_factory=list)
    server_bytes_recv: list[int] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)
    staleness: list[list] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    worker_time: list[list[float]] = field(default_factory=list)
    applied: list[list] = field(default_factory=list)
    timeline: list[dict] = field(default_factory=list)
    consensus: list[float] = field(default_factory=list)
    config: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.steps)

    def to_dataframe(self):
        """One row per step; bytes as the mean and max over ranks, and cumulative."""
        import pandas as pd

        df = pd.DataFrame({
            "step": self.steps, "loss": self.loss, "test_accuracy": self.test_accuracy,
            "test_loss": self.test_loss, "sim_time": self.sim_time, "wall_time": self.wall_time,
            "bytes_sent_mean": [sum(b) / len(b) for b in self.bytes_sent],
            "bytes_sent_max": [max(b) for b in self.bytes_sent],
        })
        df["cum_bytes_sent_mean"] = df["bytes_sent_mean"].cumsum()
        if len(self.consensus) == len(self.steps):
            df["consensus"] = self.consensus
        if len(self.samples) == len(self.steps):
            df["cum_samples"] = pd.Series(self.samples).cumsum().to_numpy()
        if len(self.staleness) == len(self.steps):  # mean over the applied gradients of the step
            applied = [[s for s in row if s is not None] for row in self.staleness]
            df["staleness_mean"] = [sum(a) / len(a) if a else math.nan for a in applied]
        return df.set_index("step")

    @property
    def final_accuracy(self) -> float:
        """The last measured test accuracy."""
        measured = [a for a in self.test_accuracy if not math.isnan(a)]
        return measured[-1] if measured else math.nan

    def total_bytes_sent(self) -> list[int]:
        """Bytes each rank sent over the whole run."""
        return [sum(col) for col in zip(*self.bytes_sent)] if self.bytes_sent else []

    def same_as(self, other: "History") -> bool:
        """True when every deterministic column is bit-for-bit equal (NaN equals NaN)."""
        def same(a, b):
            return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))

        return self.steps == other.steps and all(
            len(getattr(self, c)) == len(getattr(other, c))
            and all(same(a, b) for a, b in zip(getattr(self, c), getattr(other, c))) for c in DETERMINISTIC)

    def plot(self, x: str = "step", y: str = "loss", ax=None, label=None, **kw):
        """Plot a column against "step", "sim_time", "wall_time" or "bytes" (cumulative mean bytes sent)."""
        import matplotlib.pyplot as plt

        df = self.to_dataframe().reset_index()
        xcol = {"bytes": "cum_bytes_sent_mean"}.get(x, x)
        for col, what in ((xcol, "x"), (y, "y")):
            if col not in df.columns:
                raise ValueError(f"unknown {what} column {col!r}; valid: bytes, {', '.join(df.columns)}")
        df = df.dropna(subset=[y])
        ax = ax or plt.gca()
        ax.plot(df[xcol], df[y], label=label, **kw)
        ax.set_xlabel({"sim_time": "simulated time (s)", "wall_time": "wall time (s)",
                       "cum_bytes_sent_mean": "bytes sent per worker"}.get(xcol, xcol))
        ax.set_ylabel(y.replace("_", " "))
        return ax


def clock_gaps(applied, workers: int) -> np.ndarray:
    """The spread of the workers' clocks at the server, max_w c_w - min_v c_v, after each applied
    push, from a server's log of (worker, worker's step, staleness) triples in the order applied
    (``History.applied``); c_w is the step of worker w's latest push so far (0 before its first).
    Meaningful for policies that apply every push as it is taken (ASP, SSP, round-robin), where
    the log is the order of arrival: SSP(s) keeps the spread at most s + 1."""
    clocks, gaps = [0] * workers, []
    for w, step, _ in applied:
        clocks[w] = step
        gaps.append(max(clocks) - min(clocks))
    return np.array(gaps, dtype=int)


def merge_ranks(results: list[dict], config: dict) -> History:
    """The History of a run from its ranks' records (as :func:`commlab.train.Trainer.fit`'s ranks
    return them: per-step lists ``loss``, ``acc``, ``test_loss``, ``sim``, ``wall``, ``sent``,
    ``recv``, ``staleness``, ``samples``, ``consensus``, and a ``timeline``; a server rank returns
    ``{"server": record}``, the record with its ``stats`` and, for a parameter server, its log). ``results[0]`` is the rank that evaluated; ``config``: the options, as a dict."""
    servers = [r["server"] for r in results if "server" in r]
    results = [r for r in results if "server" not in r]
    n, W = len(results[0]["loss"]), len(results)
    h = History(config={k: (v if isinstance(v, (int, float, str, type(None))) else repr(v))
                        for k, v in config.items()})
    h.steps = list(range(1, n + 1))
    h.loss = [_nanmean([r["loss"][i] for r in results]) for i in range(n)]
    h.test_accuracy = results[0]["acc"]
    h.test_loss = results[0]["test_loss"]
    h.worker_time = [[r["sim"][i] for r in results] for i in range(n)]
    # an asynchronous decentralized rule's step k is the median worker's (commlab.decentral.adpsgd)
    h.sim_time = [statistics.median(row) if results[0].get("median_time") else max(row) for row in h.worker_time]
    h.wall_time = [max(r["wall"][i] for r in results) for i in range(n)]
    h.bytes_sent = [[r["sent"][i] for r in results] for i in range(n)]
    h.bytes_recv = [[r["recv"][i] for r in results] for i in range(n)]
    h.samples = [sum(r["samples"][i] for r in results) for i in range(n)]
    h.timeline = results[0]["timeline"]
    if any(v is not None for v in results[0]["consensus"]):
        h.consensus = [math.nan if v is None else v for v in results[0]["consensus"]]
    h.server_bytes_sent = [srv["stats"].bytes_sent for srv in servers]
    h.server_bytes_recv = [srv["stats"].bytes_recv for srv in servers]
    if servers and "applied" in servers[0]:  # shard 0's log: each applied push's staleness, None if dropped
        h.staleness = [[None] * W for _ in range(n)]
        h.dropped = [0] * n
        h.applied = [list(a) for a in servers[0]["applied"]]
        for w, k, stale in servers[0]["applied"]:
            h.staleness[k - 1][w] = stale
        for w, k in servers[0]["dropped"]:
            h.dropped[k - 1] += 1
    elif any(s is not None for s in results[0]["staleness"]):
        h.staleness = [[r["staleness"][i] for r in results] for i in range(n)]
        h.dropped = [0] * n
    return h


def _nanmean(values) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan
