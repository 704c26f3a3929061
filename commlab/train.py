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
from dataclasses import asdict, fields
from functools import partial

import torch

from . import arch as arch_pkg
from . import checks
from . import compress as compress_pkg
from . import data as data_pkg
from . import rules
from . import decentral  # noqa: F401  (registers sync='dpsgd', ..., arch='gossip')
from . import parallel as parallel_pkg  # also registers arch='zero(stage=...)'
from . import schedule as schedule_pkg
from . import sync as sync_pkg
from .arch import ExchangeSetup
from .config import Config
from .history import Diverged, History, check_health, merge_ranks
from .models.intensity import count_params, flops_per_sample
from .models import build_model
from .net.clock import DEFAULT_FLOPS, as_network
from .net.link import get_link
from .schedule.engine import Engine, ScheduledExchange, flat_ranges, segments
from .runtime import RankError, launch
from .worker import Worker, evaluate

_BUILD_LOCK = threading.Lock()  # threads share torch's global RNG: build models one at a time
# A rank step of fewer training FLOPs than this is Python-bound: on the threads runtime its ranks
# share one core (runtime.thread_ranks.caller_core; measured on 2 cores: 8 ranks of the digits MLP,
# 0.9 MFLOP a step, 2.4x faster on one core; a 65 MFLOP step breaks even; 230 MFLOP 1.3x slower)
PYTHON_BOUND_FLOPS = 3e7


class Trainer:
    """Data-parallel training of ``model`` on ``data`` by ``workers`` ranks.

    sync: "bsp", "asp", "ssp(staleness=2)", "backup(backups=1)", "round_robin" (these four over
    a parameter server), "hogwild", "local_sgd(period=4)", "post_local_sgd(switch=100, period=4)",
    "fedavg(fraction=0.5, epochs=1)", "dynamic_batch(growth=1.1)" (see :mod:`commlab.sync`), or a
    decentralized rule over gossip: "dpsgd", "dcd_psgd", "ecd_psgd", "choco(gamma=0.4)",
    "naive_gossip", "adpsgd" (see :mod:`commlab.decentral`; the History adds the consensus
    distance and evaluates the average model).
    arch: an all-reduce algorithm ("native", "ring", ...), a parameter server ("ps",
    "ps(shards=4)", "ps(shards=2, colocated=True)"; server ranks are added after the workers), or
    "gossip(topology='ring')" (torus, hypercube, exponential, complete, star, random_regular).
    compress: None or a compressor spec ("qsgd(levels=16)", "topk(0.01)+ef", "powersgd(rank=2)",
    ...), applied to the gradients over an all-reduce architecture, to the pushes over a parameter
    server; reply_compress: the server's replies too (double compression, arch="ps" only).
    compress_per: how compressed gradients are cut into messages: "bucket" (default) compresses
    the fused buffer of all gradients as one tensor (one message a step, one state for error
    feedback; with a schedule, each of its buckets), as PyTorch DDP's communication hooks do;
    "tensor" makes each parameter tensor its own compressed message, as Horovod's compression does
    (over an all-reduce, or FedAvg's uploads; refused without a compressor). A compressor of whole
    tensors (PowerSGD's matrices) gets each weight in its shape either way.
    schedule: None (every gradient in one message after backward) or a policy of
    :mod:`commlab.schedule` ("wfbp", "fusion(mb=25, first_mb=1)", "mg_wfbp",
    "bytescheduler(partition_mb=4, credit_mb=16)", "p3(slice_kb=256)"), sync="bsp" only: its
    messages go during backward from a communication thread per rank, and the History keeps
    their timeline.
    parallel: None, or a 3D layout of the tiny transformer (model="transformer", data="tokens"):
    "dp=2,tp=2,pp=2,micro_batches=4,schedule=1f1b[,sequence_parallel=1]" with dp*tp*pp = workers (see
    :mod:`commlab.parallel`): tensor-parallel layers, a pipeline of stages, BSP over the dp
    replicas; it trains exactly like BSP over dp workers. ZeRO is an architecture:
    arch="zero(stage=2)".
    net: None, a profile name ("10GbE", ...), a LinkModel or a Network.
    runtime: "threads", "gloo" or "nccl". split: "iid" or "dirichlet" (with dirichlet_alpha).
    """

    def __init__(self, model="mlp", data="digits", workers: int = 4, sync="bsp", arch="native", compress=None,
                 schedule=None, net=None, runtime: str = "threads", seed: int = 0, **options):
        valid = {f.name for f in fields(Config)}
        unknown = set(options) - valid
        if unknown:
            raise TypeError(f"unknown Trainer option(s) {sorted(unknown)}; valid: {', '.join(sorted(valid))}")
        # every option is checked here, before any rank starts: Config checks the numbers and
        # choices, each dimension's registry its names, the rulebook (commlab.rules) the combination
        self.config = c = Config(model=model, data=data, workers=workers, sync=sync, arch=arch, compress=compress,
                                 schedule=schedule, runtime=runtime, seed=seed, **options)
        sync = sync_pkg.get(c.sync)
        if sync.default_arch is not None and c.arch == "native":
            c.arch = sync.default_arch  # a single server, or a ring of neighbours
        arch = arch_pkg.get(c.arch)
        schedule = schedule_pkg.get(c.schedule)
        rules.check(c, sync, arch, compress_pkg.get(c.compress), compress_pkg.get(c.reply_compress), schedule)
        self.network = as_network(net)
        self.dataset = data if isinstance(data, data_pkg.Dataset) else data_pkg.load(data, seed=seed, **c.data_kw)
        probe = _build(c, self.dataset)
        self.num_params = count_params(probe)
        self.flops_per_sample = flops_per_sample(probe, self.dataset.x_train[:1])
        self.schedule = None if schedule is None else _plan(schedule, probe, self.dataset, c, arch, self.network)
        self.layout = None if c.parallel is None else parallel_pkg.layout_for(c, probe)
        replicas = workers if self.layout is None else self.layout.dp  # data shards: one per replica
        share = len(self.dataset.y_train) // replicas
        if c.batch_size > share:  # a batch never holds more than one pass over its worker's shard
            raise ValueError(f"Trainer option batch_size={c.batch_size} is larger than a worker's share of the "
                             f"{len(self.dataset.y_train):,} training samples ({share:,} each for {replicas} "
                             f"replicas); valid: 1..{share}")
        self.shards = (data_pkg.split_iid(len(self.dataset.y_train), replicas, seed) if c.split == "iid" else
                       data_pkg.split_dirichlet(self.dataset.y_train, replicas, c.dirichlet_alpha, seed))

    def fit(self, steps: int) -> History:
        """Train for ``steps`` synchronization steps; returns the History."""
        if not checks.is_int(steps) or steps < 1:
            raise ValueError(f"steps must be a positive integer, got {steps!r}")
        c = self.config
        if self.layout is not None:
            return self._fit_parallel(steps)
        world = arch_pkg.get(c.arch).world_size(c.workers)
        sync = sync_pkg.get(c.sync)
        with _BUILD_LOCK:  # state shared by all ranks of the process (Hogwild's parameters), or None
            torch.manual_seed(c.seed)
            shared = sync.shared_state(lambda: build_model(c.model, self.dataset, **c.model_kw))
        results = _launch(_train_rank, world, c, self.network,
                          (c, self.dataset, self.shards, self.flops_per_sample, shared, steps, self.schedule),
                          self.flops_per_sample)
        return merge_ranks(results, asdict(c))

    def _fit_parallel(self, steps: int) -> History:
        """A 3D-parallel run (:mod:`commlab.parallel.training`); the shards of replica 0 kept at each
        evaluation step are joined into the full model and evaluated here, so evaluating sends nothing."""
        c, ds = self.config, self.dataset
        results = _launch(parallel_pkg.train_rank, self.layout.world, c, self.network,
                          (c, ds, self.shards, self.flops_per_sample, partial(_build, c, ds), self.layout, steps),
                          self.flops_per_sample)
        full = _build(c, ds)
        for step in results[0]["snapshots"]:
            parallel_pkg.join(full, results, self.layout, step)
            results[0]["acc"][step - 1], results[0]["test_loss"][step - 1] = evaluate(full, ds.x_test, ds.y_test,
                                                                                       "cpu")
        return merge_ranks(results, asdict(c))


def _launch(rank_fn, world: int, c: Config, network, args, flops_per_sample: float) -> list:
    """Run ``rank_fn`` on every rank (threads of a Python-bound step on one core, see
    :data:`PYTHON_BOUND_FLOPS`); a rank's Diverged (which reaches us as a RankError's text from a
    Gloo process) is raised as itself."""
    one_core = flops_per_sample * c.batch_size < PYTHON_BOUND_FLOPS
    try:
        return launch(rank_fn, world, runtime=c.runtime, net=network, timeout=c.timeout, args=args,
                      one_core=one_core)
    except RankError as e:
        diverged = Diverged.from_message(str(e))
        if diverged is not None:
            raise diverged from e
        raise


class Scheduled:
    """A run's schedule, fixed before any rank starts: the model's profile, the policy's plan,
    and the step's messages in send order (the same on every rank)."""

    def __init__(self, profile, plan, messages, ranges):
        self.profile, self.plan, self.messages, self.ranges = profile, plan, messages, ranges


def _plan(schedule, probe, ds, c: Config, arch, network) -> Scheduled:
    """Profile the model on one mini-batch, plan, and dispatch with the architecture's closed
    form on the run's link (10GbE when the run has no network model) at its FLOP rate."""
    flops = network.flops if network is not None and network.flops else DEFAULT_FLOPS
    link = network.link if network is not None else get_link("10GbE")
    profile = schedule_pkg.model_profile(probe, ds.x_train[:c.batch_size], flops=flops)
    comm_time = lambda n: arch.time(n, c.workers, link, network)  # noqa: E731
    plan = schedule.plan(profile, comm_time)
    messages = schedule_pkg.dispatch(plan, profile, comm_time)
    numels = [p.numel() for p in probe.parameters() if p.requires_grad]
    cuts = any((b - a) != numels[pos] for segs in segments(plan, profile, numels) for pos, a, b in segs)
    rules.check_cuts(c, compress_pkg.get(c.compress), cuts)
    return Scheduled(profile, plan, messages, flat_ranges(messages, plan, profile, numels))


def _build(c: Config, ds):
    """The run's model, built from its seed (threads share torch's RNG: one build at a time)."""
    with _BUILD_LOCK:
        torch.manual_seed(c.seed)
        return build_model(c.model, ds, **c.model_kw)


def _rank_compressor(c: Config, rank: int):
    """This rank's compressor: its own random stream (seed + rank) unless its randomness must
    agree across ranks (summable payloads such as rand-k indices or PowerSGD's shared Q)."""
    compressor = compress_pkg.get(c.compress)
    if compressor is not None:
        base = compressor.base
        if not getattr(base, "shared_seed", base.aggregation == "sum"):
            base.seed = base.seed + c.seed + rank
    return compressor


def _train_rank(comm, c: Config, ds, shards, flops, shared, steps, scheduled=None):
    """What one rank does: a parameter server's loop, or a worker's steps."""
    model = _build(c, ds)
    model.to(comm.device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=c.lr, momentum=c.momentum, weight_decay=c.weight_decay)
    sync, arch = sync_pkg.get(c.sync), arch_pkg.get(c.arch)
    setup = ExchangeSetup(c.workers, reply=compress_pkg.get(c.reply_compress), policy=sync.server_policy(),
                          messages=None if scheduled is None else scheduled.ranges, compress_per=c.compress_per)
    if arch.serves(comm.rank, c.workers):  # a server rank decodes with the run's compressor
        setup.compressor = compress_pkg.get(c.compress)
        return {"server": arch.serve(comm, model, optimizer, setup)}
    setup.compressor = _rank_compressor(c, comm.rank)
    if shared is not None:
        sync.bind(shared)
    shard = shards[comm.rank]
    exchange = arch.exchange(comm, model, optimizer, setup)
    if scheduled is not None:
        exchange = ScheduledExchange(exchange, Engine(comm, model, exchange, scheduled.profile, scheduled.plan,
                                                      scheduled.messages, timeout=c.timeout))
    worker = Worker(comm, c, model=model, optimizer=optimizer, exchange=exchange,
                    batches=data_pkg.batches(ds.x_train, ds.y_train, shard, c.batch_size, seed=c.seed + comm.rank),
                    shard_size=len(shard), flops_per_sample=flops)
    rec = {k: [] for k in ("loss", "acc", "test_loss", "sim", "wall", "sent", "recv", "staleness", "samples",
                           "consensus")}
    bar = _progress(steps) if comm.rank == 0 and c.progress else None
    sync.start(steps)
    start = time.perf_counter()
    for step in range(1, steps + 1):
        before = comm.stats.snapshot()
        info = sync.round(worker)
        # a NaN or Inf in the model shows in the next step's loss; its tensors are read at the last
        # step only (reading them every step was a sixth of a small model's step)
        check_health(sync.name, step, comm.rank, info["loss"], model.parameters() if step == steps else (),
                     trained=info.get("samples") != 0)
        delta = comm.stats.snapshot() - before
        rec["loss"].append(info["loss"])
        rec["staleness"].append(info.get("staleness"))
        rec["samples"].append(info.get("samples", c.batch_size))
        rec["consensus"].append(info.get("consensus"))
        rec["sent"].append(delta.bytes_sent)
        rec["recv"].append(delta.bytes_recv)
        rec["sim"].append(comm.now if comm.clock is not None else math.nan)
        acc = tl = math.nan
        if _evaluates(step, steps, c):
            with exchange.evaluating(model):
                if comm.rank == 0:
                    acc, tl = evaluate(model, ds.x_test, ds.y_test, comm.device, info.get("average"))
                    check_health(sync.name, step, comm.rank, tl)  # the model the server holds
        rec["acc"].append(acc)
        rec["test_loss"].append(tl)
        rec["wall"].append(time.perf_counter() - start)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{info['loss']:.3f}", refresh=False)
    if bar is not None:
        bar.close()
    for step, late in enumerate(sync.finish(worker) or (), start=1):  # records made only at the end
        rec["consensus"][step - 1] = late["consensus"]
        rec["median_time"] = True
        if comm.rank == 0 and _evaluates(step, steps, c):
            rec["acc"][step - 1], rec["test_loss"][step - 1] = evaluate(model, ds.x_test, ds.y_test, comm.device,
                                                                         late["average"])
    worker.exchange.close()
    rec["timeline"] = list(worker.exchange.timeline)
    return rec


def _evaluates(step: int, steps: int, c: Config) -> bool:
    return step % c.eval_every == 0 or step == steps


def _progress(steps):
    from tqdm.auto import tqdm

    return tqdm(total=steps, desc="training", leave=False)
