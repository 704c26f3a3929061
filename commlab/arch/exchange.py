"""A rank's exchange: the one object a synchronizer calls to agree with the other workers.

An architecture builds one exchange per worker rank (:mod:`commlab.arch.architectures`), so
nothing above it needs to know whether a ring, a tree or a parameter server sits below:

* ``step(model, optimizer)``: average this step's gradients over the workers and apply them
  (BSP's step). Over all-reduce: one flat buffer through the algorithm, compressed or not, then
  the local optimizer. Over a parameter server: push the gradient, the server applies its
  optimizer by its policy, pull the parameters.
* ``average(tensors)``: the average over the workers of each tensor (local SGD's models, or
  their compressed changes), returned as new tensors.
* ``compressor``: what the exchange compresses with (None: nothing), ``close()``: leave.
* ``message(m, tensors)``: one scheduled message m of a step (:mod:`commlab.schedule.engine`):
  ``gives`` says whether it returns the averaged gradients of ``tensors`` (all-reduce) or the
  parameters the server made from them (a parameter server).

How compressed gradients are cut into messages over an all-reduce is the Trainer's
``compress_per`` (:data:`commlab.spec.COMPRESS_PER`). ``"bucket"`` (the default): the step's
gradients flattened into one buffer (or a schedule's bucket) and compressed as one tensor, keyed
:data:`FUSED` (a bucket: ``("bucket", m)``), so error feedback, DGC's momentum or DIANA's shift is
one state for the whole buffer, and the step pays one collective's start-ups, as PyTorch DDP's
communication hooks (fp16, PowerSGD) compress its buckets. A compressor that declares
``whole_tensors`` (PowerSGD's matrices) gets the buffer's tensors in their shapes, in one call of
its protocol (its factors still travel in one all-reduce each). ``"tensor"``: each parameter
tensor is its own compressed message (keys 0, 1, ...; in a bucket ``(m, i)``), as Horovod
compresses each tensor: the same payload bytes but one collective, with its start-ups, per tensor.
"""
from __future__ import annotations

from contextlib import nullcontext

import torch

from ..flat import flatten, grads, unflatten_into
from ..spec import COMPRESS_PER
from .aggregate import aggregate, aggregate_all


class Exchange:
    """Base class of a rank's exchange: ``step``, ``average``, ``close`` and the scheduled hooks (module doc)."""
    compressor = None
    gives = "gradients"  # what message() returns
    timeline = ()  # a scheduled exchange's log of its messages (commlab.schedule.engine)

    def step(self, model: torch.nn.Module, optimizer) -> None:
        """Average this step's gradients over the workers and apply them with ``optimizer``."""
        raise NotImplementedError

    def average(self, tensors) -> list[torch.Tensor]:
        """The average over the workers of each of these tensors (local SGD's model averaging)."""
        raise NotImplementedError

    def close(self) -> None:
        """Leave the exchange (a parameter server's workers say goodbye)."""

    def evaluating(self, model):
        """A context, entered by every rank at an evaluation step, in which ``model`` is whole for
        rank 0 to evaluate (an exchange that shards the parameters gathers them off the record)."""
        return nullcontext()

    def begin(self, flops: float) -> bool:
        """Called before a mini-batch's forward with its training FLOPs; True if the exchange
        charges that compute to the clock itself (a scheduled one does, layer by layer)."""
        return False

    def message(self, m: int, tensors) -> list[torch.Tensor]:
        """Scheduled message ``m`` of a step with these gradient tensors (see the module doc)."""
        raise ValueError(f"{type(self).__name__} cannot send scheduled messages; use schedule=None")


FUSED = "fused"  # the state key of an unscheduled step's fused buffer (a schedule's bucket m: ("bucket", m))


class AllReduceExchange(Exchange):
    """Averages over an all-reduce ``algorithm`` (an :class:`~commlab.arch.architectures.AllReduce`),
    compressed by ``compressor`` if given, per ``compress_per`` (the module doc). Bytes per step and
    rank: the algorithm's (a ring: 2 (N-1)/N of the gradient), or the compressed payloads'
    (:mod:`commlab.arch.aggregate`)."""

    def __init__(self, comm, algorithm, compressor=None, compress_per: str = "bucket"):
        if compress_per not in COMPRESS_PER:
            raise ValueError(f"compress_per={compress_per!r} is not known; valid: {', '.join(COMPRESS_PER)}")
        self.comm, self.algorithm, self.compressor, self.compress_per = comm, algorithm, compressor, compress_per

    def step(self, model, optimizer) -> None:
        """All-reduce the gradients (compressed if a compressor is set), average, then the optimizer step."""
        g = grads(model)
        if self.compressor is None:
            self._average_into(g, g)  # no copy beside the all-reduce's flat buffer
        else:
            for gi, avg in zip(g, self.average(g)):
                gi.copy_(avg)
        optimizer.step()

    def _compressed(self, tensors: list, key, keys: list) -> list[torch.Tensor]:
        """The compressed average of ``tensors``, cut as ``compress_per`` says (module doc): their
        concatenation as one tensor keyed ``key``, a whole-tensor compressor's tensors (``keys``) in
        one call of its protocol, or each tensor (``keys``) its own message."""
        c, comm, name, kw = self.compressor, self.comm, self.algorithm.name, self.algorithm.kw
        if self.compress_per == "tensor":
            return [aggregate(comm, c, t, k, name, **kw) for t, k in zip(tensors, keys)]
        if c.base.whole_tensors:
            return aggregate_all(comm, c, tensors, keys, name, **kw)
        out = [torch.empty_like(t) for t in tensors]
        unflatten_into(aggregate(comm, c, flatten(tensors), key, name, **kw), out)
        return out

    def _average_into(self, tensors, out) -> list[torch.Tensor]:
        """The uncompressed average of ``tensors``, one all-reduce of their concatenation,
        written into ``out`` (which may be ``tensors`` themselves)."""
        flat = flatten(tensors)
        self.algorithm.allreduce(self.comm, flat, op="avg")
        unflatten_into(flat, out)
        return out

    def average(self, tensors) -> list[torch.Tensor]:
        """The mean of each tensor over the ranks: one flat all-reduce, or the compressed aggregate
        (the fused buffer keyed :data:`FUSED`, or per tensor, keys 0, 1, ...)."""
        tensors = list(tensors)
        if self.compressor is None:
            return self._average_into(tensors, [torch.empty_like(t) for t in tensors])
        return self._compressed(tensors, FUSED, list(range(len(tensors))))

    def message(self, m: int, tensors) -> list[torch.Tensor]:
        """The average of one message's gradient tensors: one all-reduce of their concatenation
        (a bucket), written back into ``tensors``, or with a compressor the bucket compressed as
        one tensor keyed ``("bucket", m)`` (per tensor: keys ``(m, i)``; module doc)."""
        tensors = list(tensors)
        if self.compressor is None:
            return self._average_into(tensors, tensors)  # in place: the engine's copy is skipped
        return self._compressed(tensors, ("bucket", m), [(m, i) for i in range(len(tensors))])

    def __repr__(self) -> str:
        return (f"AllReduceExchange({self.algorithm!r}, compressor={self.compressor!r}, "
                f"compress_per={self.compress_per!r})")


class ServerExchange(Exchange):
    """A worker's side of a parameter server (:class:`commlab.arch.ps.PSClient`): ``step``
    pushes the gradient and pulls the parameters the server's optimizer made. The server
    averages gradients only, so ``average`` (of models) is not offered."""

    def __init__(self, client, compressor=None):
        self.client, self.compressor = client, compressor

    def step(self, model, optimizer) -> None:
        """Push the gradients, pull the new parameters: the server owns the optimizer."""
        self.client.step(model)  # the server owns the optimizer

    def average(self, tensors):
        """Always ValueError: a parameter server averages gradients, not models."""
        raise ValueError("a parameter server averages gradients, not models; use an all-reduce arch for model "
                         "averaging (local SGD)")

    def close(self) -> None:
        """Say goodbye to every server (the PSClient's close)."""
        self.client.close()

    def __repr__(self) -> str:
        return f"ServerExchange(compressor={self.compressor!r})"


class ScheduledServerExchange(Exchange):
    """A worker's side of a scheduled parameter server (:mod:`commlab.arch.ps_scheduled`):
    ``message(m, tensors)`` pushes one message's gradients and returns the new parameters."""

    gives = "parameters"

    def __init__(self, client):
        self.client = client

    def message(self, m: int, tensors) -> list[torch.Tensor]:
        """Push message ``m``'s gradient tensors; the new parameters, shaped like them."""
        tensors = list(tensors)
        out = [torch.empty_like(t) for t in tensors]
        unflatten_into(self.client.exchange(m, flatten(tensors)), out)
        return out

    def close(self) -> None:
        """Say goodbye to every server."""
        self.client.close()

    def __repr__(self) -> str:
        return "ScheduledServerExchange()"
