"""3D-parallel training of the tiny transformer: what one rank does under ``Trainer(parallel=...)``.

``Trainer(model="transformer", data="tokens", workers=8, parallel="dp=2,tp=2,pp=2,micro_batches=4")``
runs :func:`train_rank` on every rank of the :class:`~commlab.parallel.layout.Layout`. Each step,
on rank (d, t, s):

1. replica d draws its mini-batch of ``batch_size`` from data shard d (every rank of the replica
   draws the same one: the first stage needs the tokens, the last the labels) and cuts it into
   m micro-batches;
2. the pipeline (:func:`~commlab.parallel.pipeline.run_pipeline`, GPipe or 1F1B) runs forward
   and backward of the m micro-batches through the stages, each stage's layers tensor-split over
   its tp group (:mod:`commlab.parallel.stages`; with ``sequence_parallel=1`` the activations
   are cut along the sequence too); micro-batch i's loss is scaled by n_i / B so
   the accumulated gradient is the batch mean's;
3. the dp ranks holding the same shard average its gradient (a ring all-reduce over the dp group:
   2 (dp-1)/dp of the shard per rank) and each applies the Trainer's SGD rule to its shard.

Step 3 is BSP's update and steps 1-2 compute exactly the batch gradient, so the run equals BSP
data parallelism over ``dp`` workers (and so single-process training on the union of their
batches) up to float rounding: the test oracle. Per step, per rank, the wire carries the tp
all-reduces (4 per layer per micro-batch of b s h values), the activations and their gradients
at the stage boundaries (b s h values per micro-batch each way) and the dp all-reduce.

Compute on the simulated clock: the model's training FLOPs per sample (the Trainer's count)
times the stage's share of the encoder layers over tp, one third forward and two thirds backward
(the embeddings, pooling and head are not counted apart). Nothing is sent to evaluate: the ranks
of replica 0 keep a copy of their shard at each evaluation step, and the Trainer joins the
shards into the full model (:func:`join`) and evaluates it on the test set after the run.
"""
from __future__ import annotations

import math
import time
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from ..data import batches
from ..flat import flatten, unflatten_into
from ..history import check_health
from .layout import Layout
from .pipeline import run_pipeline
from .stages import shape_of, stage_layers, transformer_stage
from .tensor_layer import sync_replicated_grads


def layout_for(c, probe) -> Layout:
    """The run's Layout, checked against the Trainer's other options (``c``) and the built model
    ``probe`` before any rank starts: a clear ValueError naming the valid choices otherwise."""
    layout = Layout.parse(c.parallel)
    if not (hasattr(probe, "encoder") and hasattr(probe, "tok")):
        raise ValueError(f"parallel={c.parallel!r} splits the tiny transformer's layers and heads; valid: "
                         f"model='transformer' (data='tokens'), got model={c.model!r}")
    fixed = dict(sync=("bsp",), arch=("native", "ring"), compress=(None,), schedule=(None, "none"))
    for option, valid in fixed.items():
        if getattr(c, option) not in valid:
            raise ValueError(f"parallel={c.parallel!r} trains with BSP over its dp groups (a ring all-reduce); "
                             f"{option}={getattr(c, option)!r} is not valid with it; valid: "
                             f"{', '.join(map(repr, valid))}")
    return layout.check(c.workers, batch_size=c.batch_size, **shape_of(probe))


def _compute(comm, flops_per_sample: float, share: float):
    """Seconds of an op on micro-batch i of ``sizes`` for the pipeline's clock (None: no clock)."""
    rate = comm.clock.network.flops if comm.clock is not None else None
    if not rate:
        return None, None
    sizes: list[int] = []

    def seconds(op, i):
        third = 1 / 3 if op == "F" else 2 / 3
        return flops_per_sample * sizes[i] * share * third / rate

    return seconds, sizes


def train_rank(comm, c, ds, shards, flops_per_sample: float, build, layout, steps: int) -> dict:
    """Rank ``comm.rank``'s part of a 3D-parallel run (see the module doc). ``c``: the Trainer's
    Config; ``build()``: the full model, built from the seed; ``shards``: the dp data shards."""
    d, t, s = layout.coords(comm.rank)
    groups = layout.groups(comm)
    full = build()
    stage = transformer_stage(full, s, layout.pp, groups["tp"], layout.sequence_parallel).to(comm.device).train()
    del full
    params = [p for p in stage.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=c.lr, momentum=c.momentum, weight_decay=c.weight_decay)
    source = batches(ds.x_train, ds.y_train, shards[d], c.batch_size, seed=c.seed + d)
    share = len(stage.layers) / stage.total_layers / layout.tp
    seconds, sizes = _compute(comm, flops_per_sample, share)
    rec = {k: [] for k in ("loss", "acc", "test_loss", "sim", "wall", "sent", "recv", "staleness", "samples",
                           "consensus")}
    rec["snapshots"] = {}
    start = time.perf_counter()
    for step in range(1, steps + 1):
        before = comm.stats.snapshot()
        x, y = next(source)
        m = min(layout.micro_batches, len(y))
        xs, ys = list(x.to(comm.device).tensor_split(m)), list(y.to(comm.device).tensor_split(m))
        if sizes is not None:
            sizes[:] = [len(part) for part in ys]
        scale = m / len(y)

        def loss_fn(out, target):
            return F.cross_entropy(out, target, reduction="sum") * scale

        optimizer.zero_grad(set_to_none=False)
        losses = run_pipeline(groups["pp"], stage, layout.schedule, m, inputs=xs, targets=ys, loss_fn=loss_fn,
                              compute=seconds)
        sync_replicated_grads(stage, groups["tp"])  # sequence parallelism's partial LayerNorm gradients
        flat = flatten(p.grad for p in params)
        groups["dp"].all_reduce(flat, op="avg")
        unflatten_into(flat, [p.grad for p in params])
        optimizer.step()
        loss = sum(losses) / len(losses) if stage.last else math.nan
        check_health("bsp", step, comm.rank, loss, params, trained=stage.last)  # only the last stage has a loss
        delta = comm.stats.snapshot() - before
        rec["loss"].append(loss)
        rec["staleness"].append(None)
        rec["samples"].append(len(y) if (t == 0 and s == 0) else 0)
        rec["consensus"].append(None)
        rec["sent"].append(delta.bytes_sent)
        rec["recv"].append(delta.bytes_recv)
        rec["sim"].append(comm.now if comm.clock is not None else math.nan)
        rec["acc"].append(math.nan)
        rec["test_loss"].append(math.nan)
        rec["wall"].append(time.perf_counter() - start)
        if d == 0 and (step % c.eval_every == 0 or step == steps):
            rec["snapshots"][step] = [p.detach().cpu().clone() for p in params]
    rec["timeline"] = []
    rec["coords"] = (d, t, s)
    return rec


def join(full, results, layout, step: int) -> None:
    """Write the shards that replica 0's ranks kept at ``step`` (``results``, by rank) into
    ``full``, the unsplit model, in place: each stage is rebuilt from ``full`` with a stand-in
    for its tp group (splitting needs only the rank's place), and each layer's
    :meth:`~commlab.parallel.tensor_layer.ParallelTransformerLayer.slices` says where its shards go."""
    named = dict(full.named_parameters())
    first, stops = 0, [b for _, b in stage_layers(len(full.encoder.layers), layout.pp)]
    updates = []
    for s in range(layout.pp):
        for t in range(layout.tp):
            stage = transformer_stage(full, s, layout.pp, SimpleNamespace(index=t, size=layout.tp),
                                      layout.sequence_parallel)
            where = {id(p): (f"encoder.layers.{first + j}.{name}", dim, idx)
                     for j, layer in enumerate(stage.layers) for p, name, dim, idx in layer.slices()}
            kept = results[layout.rank(0, t, s)]["snapshots"][step]
            for (name, p), value in zip(stage.named_parameters(), kept):
                updates.append((*where.get(id(p), (name, None, None)), value))
        first = stops[s]
    with torch.no_grad():
        for name, dim, idx, value in updates:
            target = named[name]
            target.copy_(value) if dim is None else target.index_copy_(dim, idx, value)
