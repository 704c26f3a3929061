"""A real run that checkpoints, loses a rank, and resumes on the ranks that are left.

:func:`run` trains a small MLP on the digits data by synchronous data-parallel SGD with momentum
over :class:`~commlab.runtime.Comm` (a sum all-reduce of the gradients every step), as an elastic
launcher (torchrun's ``--max-restarts``, or ours) would drive it:

1. Ranks train; every ``every`` steps rank 0 saves the model, the optimizer's momentum, the step
   and the losses so far, written to a temporary file and renamed over the checkpoint, so a crash
   mid-write leaves the previous checkpoint whole.
2. At step ``fail_step`` rank ``fail_rank`` dies (on Gloo its process exits without a word, as a
   machine that loses power; on threads it raises). The launcher reports which rank failed, and
   the other ranks are torn down.
3. The job restarts on the ``world - 1`` ranks left, from the checkpoint: the steps since it are
   lost and run again.

**Same data order, same loss.** Step s draws its global batch of B examples from a generator
seeded by (seed, s), whatever the number of ranks; rank r takes examples r, r + p, r + 2p ... of
it and sums its examples' losses divided by B, so the all-reduced gradient is the gradient of the
global batch's mean loss for any p. The resumed run therefore follows the uninterrupted one's
trajectory, up to the order in which floating-point sums are added (about 1e-7).
"""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import torch
import torch.nn.functional as F

from .. import checks
from ..files import write_atomic
from ..data import load
from ..models import mlp
from ..runtime import RankError, launch

_BUILD = threading.Lock()  # the threads runtime shares torch's RNG: build the model under a lock


def _check(world, steps, every, fail_rank, fail_step, batch):
    for name, v in (("world", world), ("steps", steps), ("batch", batch)):
        checks.integer(name, v, where="elastic run")
    if not checks.is_int(every) or every <= 0:
        raise ValueError(f"elastic run: checkpoint interval every={every!r} must be an integer number of steps > 0")
    if fail_rank is not None:
        if world < 2 or not (checks.is_int(fail_rank) and 0 <= fail_rank < world):
            raise ValueError(f"elastic run: fail_rank={fail_rank!r}; valid: 0..{world - 1} (and world >= 2)")
        if not (checks.is_int(fail_step) and 0 <= fail_step < steps):
            raise ValueError(f"elastic run: fail_step={fail_step!r}; valid: 0..{steps - 1}")


def _model(seed):
    with _BUILD:
        torch.manual_seed(seed)
        return mlp(64, 10, (32,))


def _save(path, state):
    write_atomic(path, lambda tmp: torch.save(state, tmp))


def _rank(comm, path, steps, every, batch, lr, seed, fail):
    ds = load("digits", seed)
    model = _model(seed)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    start, losses = 0, []
    if os.path.exists(path):
        state = torch.load(path, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start, losses = state["step"], list(state["losses"])
    p, r = comm.world_size, comm.rank
    for step in range(start, steps):
        if fail is not None and (r, step) == fail:
            if comm.backend != "threads":  # a process of its own
                os._exit(1)  # a crash: no exception, no message
            raise RuntimeError(f"rank {r} lost at step {step} (injected failure)")
        idx = np.random.default_rng([seed, step]).choice(len(ds.y_train), batch, replace=False)[r::p]
        idx = torch.as_tensor(idx)
        opt.zero_grad()
        loss = F.cross_entropy(model(ds.x_train[idx]), ds.y_train[idx], reduction="sum") / batch
        loss.backward()
        for prm in model.parameters():
            comm.all_reduce(prm.grad)
        total = comm.all_reduce(loss.detach().reshape(1).clone())
        losses.append(float(total))
        opt.step()
        if r == 0 and (step + 1) % every == 0:
            _save(path, {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step + 1,
                         "losses": losses})
    return losses


def run(world: int = 3, steps: int = 60, every: int = 10, fail_rank: int | None = None,
        fail_step: int | None = None, directory: str = ".", runtime: str = "gloo", batch: int = 96,
        lr: float = 0.1, seed: int = 0, timeout: float = 30.0) -> dict:
    """Train for ``steps`` steps on ``world`` ranks, checkpointing every ``every`` steps into
    ``directory``; with ``fail_rank``, that rank dies at ``fail_step`` and the job resumes on the
    others. Returns the losses by step and what happened (see the module doc)."""
    _check(world, steps, every, fail_rank, fail_step, batch)
    path = os.path.join(directory, f"elastic-seed{seed}.pt")
    if os.path.exists(path):
        os.remove(path)  # a fresh job
    fail = None if fail_rank is None else (fail_rank, fail_step)
    events, began = [], time.perf_counter()
    try:
        losses = launch(_rank, world, runtime, timeout=timeout, args=(path, steps, every, batch, lr, seed, fail))[0]
    except RankError as e:
        if fail is None:
            raise
        detected = time.perf_counter() - began
        resumed = torch.load(path, weights_only=False)["step"] if os.path.exists(path) else 0
        events.append({"failed_rank": e.rank, "at_step": fail_step, "detected_after_s": detected,
                       "resumed_from": resumed, "lost_steps": fail_step - resumed, "world_after": world - 1,
                       "error": str(e).splitlines()[0]})
        losses = launch(_rank, world - 1, runtime, timeout=timeout, args=(path, steps, every, batch, lr, seed, None))[0]
    if os.path.exists(path):
        os.remove(path)
    return {"losses": losses, "events": events, "seconds": time.perf_counter() - began}
