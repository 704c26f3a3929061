"""``Trainer``: one point of the product space synchronization x architecture x
compression x scheduling, run on a runtime, timed on a network model.

    run = Trainer(model="mlp", data="digits", workers=4, sync="bsp", arch="native",
                  net="10GbE", runtime="threads", seed=0)
    history = run.fit(steps=200)

Every worker builds the same model from the seed, draws mini-batches of ``batch_size``
from its own shard of the training set, and hands its gradients to the synchronizer,
which talks only to ``comm``. Compute enters the simulated clock as the model's FLOPs
at ``Network.flops`` (1 TFLOP/s unless set), so the simulated time is as
reproducible as the loss.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F

from . import arch as arch_pkg
from . import compress as compress_pkg
from . import data as data_pkg
from . import models
from . import schedule as schedule_pkg
from . import sync as sync_pkg
from .arch.ps import ParameterServer, trainable
from .arch.ps_codec import PSCodec, check_ps_compression
from .arch.ps_policy import check_shards, get_policy
from .flat import flatten
from .history import History
from .net.clock import as_network
from .runtime import launch
from .worker import Worker

_BUILD_LOCK = threading.Lock()  # threads share torch's global RNG: build models one at a time


@dataclass
class Config:
    model: object = "mlp"
    data: str = "digits"
    workers: int = 4
    sync: str = "bsp"
    arch: str = "native"
    compress: object = None
    reply_compress: object = None
    schedule: object = None
    runtime: str = "threads"
    seed: int = 0
    batch_size: int = 32
    lr: float = 0.1
    momentum: float = 0.0
    weight_decay: float = 0.0
    split: str = "iid"
    dirichlet_alpha: float = 1.0
    eval_every: int = 10
    progress: bool = True
    timeout: float = 120.0
    data_kw: dict = field(default_factory=dict)
    model_kw: dict = field(default_factory=dict)


def build_model(name, dataset: data_pkg.Dataset, **kw) -> torch.nn.Module:
    """A model for ``dataset``: a registry name, or a callable ``f(dataset) -> nn.Module``."""
    if callable(name):
        return name(dataset)
    shape, k = dataset.input_shape, dataset.num_classes
    if name == "mlp":
        return models.mlp(dataset.in_features, k, **kw)
    if name == "cnn":
        if len(shape) != 3:
            raise ValueError(f"model 'cnn' needs image data (C, H, W); {dataset.name!r} has samples of shape {shape}"
                             " (use data='digits' with data_kw={'image': True})")
        return models.small_cnn(shape[0], k, **kw)
    if name == "resnet20":
        return models.resnet20(k, shape[0], **kw)
    if name == "transformer":
        if dataset.vocab_size is None:
            raise ValueError(f"model 'transformer' needs token data (data='tokens'), got {dataset.name!r}")
        return models.tiny_transformer(dataset.vocab_size, k, **kw)
    trainable = ("mlp", "cnn", "resnet20", "transformer")
    raise ValueError(f"unknown trainable model {name!r}; valid: {', '.join(trainable)} "
                     "(or a function dataset -> nn.Module)")


class Trainer:
    """Data-parallel training of ``model`` on ``data`` by ``workers`` ranks.

    sync: "bsp", "asp", "ssp(staleness=2)", "backup(backups=1)", "round_robin" (these four over
    a parameter server), "hogwild", "local_sgd(period=4)", "post_local_sgd(switch=100, period=4)",
    "fedavg(fraction=0.5, epochs=1)", "dynamic_batch(growth=1.1)" (see :mod:`commlab.sync`).
    arch: an all-reduce algorithm ("native", "ring", ...) or a parameter server ("ps",
    "ps(shards=4)", "ps(shards=2, colocated=True)"; server ranks are added after the workers).
    compress: None or a compressor spec ("qsgd(levels=16)", "topk(0.01)+ef", "powersgd(rank=2)",
    ...), applied layer by layer over an all-reduce architecture, to the pushes over a parameter
    server; reply_compress: the server's replies too (double compression, arch="ps" only).
    schedule: None for now.
    net: None, a profile name ("10GbE", ...), a LinkModel or a Network.
    runtime: "threads", "gloo" or "nccl". split: "iid" or "dirichlet" (with dirichlet_alpha).
    """

    def __init__(self, model="mlp", data="digits", workers: int = 4, sync="bsp", arch="native", compress=None,
                 schedule=None, net=None, runtime: str = "threads", seed: int = 0, **options):
        unknown = set(options) - {f for f in Config.__dataclass_fields__}
        if unknown:
            raise TypeError(f"unknown Trainer option(s) {sorted(unknown)}; valid: "
                            f"{', '.join(sorted(Config.__dataclass_fields__))}")
        self.config = Config(model=model, data=data, workers=workers, sync=sync, arch=arch, compress=compress,
                             schedule=schedule, runtime=runtime, seed=seed, **options)
        c = self.config
        if c.split not in ("iid", "dirichlet"):
            raise ValueError(f"unknown split {c.split!r}; valid: iid, dirichlet")
        # build every dimension once here, so a mistyped name fails before any rank starts
        sync, arch = sync_pkg.get(c.sync), arch_pkg.get(c.arch)
        schedule_pkg.get(c.schedule)
        if getattr(sync, "needs_ps", False) and not isinstance(arch, ParameterServer):
            if c.arch != "native":
                raise ValueError(f"sync={c.sync!r} runs over a parameter server: use arch='ps' or "
                                 f"'ps(shards=S)', got arch={c.arch!r}")
            c.arch, arch = "ps", arch_pkg.get("ps")  # the default architecture becomes a single server
        if isinstance(arch, ParameterServer) and hasattr(sync, "ps_policy"):
            check_shards(get_policy(sync.ps_policy()), arch.shards)
        if isinstance(arch, ParameterServer) and not hasattr(sync, "ps_policy"):
            raise ValueError(f"sync={c.sync!r} does not run over a parameter server; use an all-reduce arch "
                             f"({', '.join(n for n in arch_pkg.ARCHITECTURES.names() if n != 'ps')})")
        if hasattr(sync, "check"):
            sync.check(c)
        compressor = compress_pkg.get(c.compress)
        if compressor is not None and "dgc" in compressor.name and c.momentum:
            raise ValueError(f"compress={c.compress!r} applies momentum itself (momentum correction); "
                             f"use momentum=0 in the Trainer, got momentum={c.momentum!r}")
        check_ps_compression(c, sync, arch, compressor, compress_pkg.get(c.reply_compress))
        self.network = as_network(net)
        self.dataset = data if isinstance(data, data_pkg.Dataset) else data_pkg.load(data, seed=seed, **c.data_kw)
        with _BUILD_LOCK:
            torch.manual_seed(seed)
            probe = build_model(c.model, self.dataset, **c.model_kw)
        self.num_params = models.count_params(probe)
        self.flops_per_sample = models.flops_per_sample(probe, self.dataset.x_train[:1])
        self.shards = (data_pkg.split_iid(len(self.dataset.y_train), workers, seed) if c.split == "iid" else
                       data_pkg.split_dirichlet(self.dataset.y_train, workers, c.dirichlet_alpha, seed))

    def fit(self, steps: int) -> History:
        """Train for ``steps`` synchronization steps; returns the History."""
        if not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a positive integer, got {steps!r}")
        c = self.config
        arch = arch_pkg.get(c.arch)
        world = arch.world_size(c.workers) if hasattr(arch, "world_size") else c.workers
        sync = sync_pkg.get(c.sync)
        shared = None
        if hasattr(sync, "shared_state"):  # Hogwild: one parameter vector for all threads
            with _BUILD_LOCK:
                torch.manual_seed(c.seed)
                shared = sync.shared_state(build_model(c.model, self.dataset, **c.model_kw))
        results = launch(_train_rank, world, runtime=c.runtime, net=self.network, timeout=c.timeout,
                         args=(c, self.dataset, self.shards, self.flops_per_sample, self.network, shared, steps))
        return _merge(results, c)


def _rank_compressor(c: Config, rank: int):
    """This rank's compressor: its own random stream (seed + rank) unless its randomness must
    agree across ranks (summable payloads such as rand-k indices or PowerSGD's shared Q)."""
    compressor = compress_pkg.get(c.compress)
    if compressor is not None:
        inner = getattr(compressor, "inner", compressor)
        if not getattr(inner, "shared_seed", inner.aggregation == "sum"):
            inner.seed = inner.seed + c.seed + rank
    return compressor


def _evaluate(model, x, y, device):
    model.eval()
    with torch.no_grad():
        out = model(x.to(device))
        loss = F.cross_entropy(out, y.to(device)).item()
        acc = (out.argmax(1) == y.to(device)).float().mean().item()
    model.train()
    return acc, loss


def _train_rank(comm, c: Config, ds, shards, flops_per_sample, network, shared, steps):
    """What one rank does: a parameter server's loop, or a worker's steps."""
    with _BUILD_LOCK:
        torch.manual_seed(c.seed)
        model = build_model(c.model, ds, **c.model_kw)
    model.to(comm.device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=c.lr, momentum=c.momentum, weight_decay=c.weight_decay)
    sync, arch = sync_pkg.get(c.sync), arch_pkg.get(c.arch)
    client = None
    if isinstance(arch, ParameterServer):  # the servers own the parameters and the optimizer
        sgd = dict(lr=c.lr, momentum=c.momentum, weight_decay=c.weight_decay, policy=sync.ps_policy())
        params = flatten(p.detach() for p in trainable(model))
        reply = compress_pkg.get(c.reply_compress)
        if arch.is_server(comm.rank, c.workers):
            codec = PSCodec(compress_pkg.get(c.compress), reply)
            return {"server": arch.serve(comm, params, c.workers, codec=codec, **sgd)}
        client = arch.client(comm, params, c.workers, codec=PSCodec(_rank_compressor(c, comm.rank), reply), **sgd)
    if shared is not None:
        sync.bind(shared)
    worker = Worker(comm, c, ds, shards[comm.rank], flops_per_sample, network, model, optimizer, arch,
                    _rank_compressor(c, comm.rank), client)
    rec = {k: [] for k in ("loss", "acc", "test_loss", "sim", "wall", "sent", "recv", "staleness", "samples")}
    bar = _progress(steps) if comm.rank == 0 and c.progress else None
    start = time.perf_counter()
    for step in range(1, steps + 1):
        before = comm.stats.snapshot()
        info = sync.round(worker)
        delta = comm.stats.snapshot() - before
        rec["loss"].append(info["loss"])
        rec["staleness"].append(info.get("staleness"))
        rec["samples"].append(info.get("samples", c.batch_size))
        rec["sent"].append(delta.bytes_sent)
        rec["recv"].append(delta.bytes_recv)
        rec["sim"].append(comm.now if comm.clock is not None else math.nan)
        acc = tl = math.nan
        if comm.rank == 0 and (step % c.eval_every == 0 or step == steps):
            acc, tl = _evaluate(model, ds.x_test, ds.y_test, comm.device)
        rec["acc"].append(acc)
        rec["test_loss"].append(tl)
        rec["wall"].append(time.perf_counter() - start)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{info['loss']:.3f}", refresh=False)
    if bar is not None:
        bar.close()
    if client is not None:
        client.close()
    return rec


def _progress(steps):
    from tqdm.auto import tqdm

    return tqdm(total=steps, desc="training", leave=False)


def _merge(results, c: Config) -> History:
    servers = [r["server"] for r in results if "server" in r]
    results = [r for r in results if "server" not in r]
    n, W = len(results[0]["loss"]), len(results)
    h = History(config={k: (v if isinstance(v, (int, float, str, type(None))) else repr(v))
                        for k, v in asdict(c).items()})
    h.steps = list(range(1, n + 1))
    h.loss = [_nanmean([r["loss"][i] for r in results]) for i in range(n)]
    h.test_accuracy = results[0]["acc"]
    h.test_loss = results[0]["test_loss"]
    h.worker_time = [[r["sim"][i] for r in results] for i in range(n)]
    h.sim_time = [max(row) for row in h.worker_time]
    h.wall_time = [max(r["wall"][i] for r in results) for i in range(n)]
    h.bytes_sent = [[r["sent"][i] for r in results] for i in range(n)]
    h.bytes_recv = [[r["recv"][i] for r in results] for i in range(n)]
    h.samples = [sum(r["samples"][i] for r in results) for i in range(n)]
    h.server_bytes_sent = [srv["stats"].bytes_sent for srv in servers]
    h.server_bytes_recv = [srv["stats"].bytes_recv for srv in servers]
    if servers:  # shard 0's log: the staleness of each applied push, None for a dropped one
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
