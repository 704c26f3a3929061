"""ZeRO: data parallelism whose ranks split the model states instead of replicating them.

Rajbhandari, Rasley, Ruwase, He, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
Models", SC 2020. N data-parallel ranks each own chunk r of the flat parameter vector (Psi values,
chunks of :func:`commlab.arch.chunks.bounds`) and keep the optimizer state for that chunk only:

* **stage 1** (P_os): each step, a reduce-scatter leaves rank r the average gradient of its chunk;
  it applies the optimizer there, and an all-gather of the updated chunks gives every rank the whole
  model again. Gradients are still held whole between the backward and the reduce-scatter.
* **stage 2** (P_os+g): the same messages; the full gradient is dropped once reduced, so a rank
  keeps only its chunk of it (ZeRO reduces bucket by bucket during backward; we reduce the whole
  vector after it, which sends the same bytes).
* **stage 3** (P_os+g+p): the parameters too are kept as the rank's chunk only. Before forward an
  all-gather rebuilds them, they are released after forward, gathered again for backward (a hook on
  the model's output) and released after the reduce-scatter of the gradients. ZeRO-3 does this layer by layer,
  so only one layer is whole at a time; we gather the whole vector, the same bytes.

Bytes per rank per step (ring reduce-scatter and all-gather, each (N-1)/N Psi values): stages 1
and 2, 2 Psi (N-1)/N, as much as a ring all-reduce (BSP); stage 3, 3 Psi (N-1)/N, 1.5 times that.
The update is BSP's, so training equals BSP (Trainer(arch="ring")) up to rounding.

Memory per rank, bytes, with A bytes per parameter and per gradient and K bytes of optimizer
state per parameter (:func:`zero_memory`): stage 0 (plain data parallelism) (A + A + K) Psi;
stage 1, 2 A Psi + K Psi/N; stage 2, A Psi + (A + K) Psi/N; stage 3, (2 A + K) Psi/N. The paper's
mixed-precision Adam has A = 2 (fp16 parameters and gradients) and K = 12 (fp32 master weights,
momentum and variance): 16 Psi, 4 Psi + 12 Psi/N, 2 Psi + 14 Psi/N, 16 Psi/N. In fp32:
A = 4 and K = 0 for SGD, 4 for SGD with momentum, 8 for Adam.
When N does not divide Psi, Psi/N is the rank's own chunk (:func:`commlab.arch.chunks.bounds`).
:meth:`ZeroExchange.memory` counts the tensors a rank really holds between steps, and the tests
check they are these formulas, for fp32 SGD and Adam and for ``precision="mixed"``: the model
computes in bf16 (fp16's range problems need loss scaling, which bf16 does not; both are 2 bytes),
its gradients are reduced in bf16 (half the bytes on the wire), and the fp32 master chunk, momentum
and variance live in the optimizer shard. Mixed precision trains close to, not exactly like, fp32.
"""
from __future__ import annotations

from contextlib import nullcontext

import torch

from ..arch import ring
from ..arch.base import Architecture
from ..arch.chunks import bounds
from ..arch.exchange import Exchange
from ..net.link import get_link
from .. import checks
from .group import Group

STAGES = (1, 2, 3)
OPTIMIZERS = ("sgd", "adam")
OPTIMIZER_BYTES = {("sgd", "fp32"): 0, ("sgd+momentum", "fp32"): 4, ("adam", "fp32"): 8, ("adam", "mixed"): 12}
VALUE_BYTES = {"fp32": 4, "mixed": 2}


def check_stage(stage) -> None:
    """ValueError unless ``stage`` is 1, 2 or 3."""
    if stage not in STAGES or isinstance(stage, bool):
        raise ValueError(f"ZeRO stage {stage!r} is not known; valid stages: 1, 2, 3")


def zero_memory(psi: float, n: int, stage: int, optimizer: str = "adam", precision: str = "mixed") -> dict:
    """Bytes per rank of parameters, gradients and optimizer state (and their total) for a model
    of ``psi`` parameters over ``n`` ranks; stage 0 is plain data parallelism. ``optimizer``: "sgd",
    "sgd+momentum" or "adam"; ``precision``: "fp32" or "mixed" (Adam only, the paper's K = 12)."""
    if stage not in (0,) + STAGES or isinstance(stage, bool):
        raise ValueError(f"ZeRO stage {stage!r} is not known; valid stages: 0 (plain data parallelism), 1, 2, 3")
    checks.positive("psi", psi, unit="parameters", where="zero_memory")
    checks.count("n", n, where="zero_memory")
    if (optimizer, precision) not in OPTIMIZER_BYTES:
        raise ValueError(f"optimizer={optimizer!r} with precision={precision!r}; valid: "
                         + ", ".join(f"{o}/{p}" for o, p in OPTIMIZER_BYTES))
    a, k = VALUE_BYTES[precision], OPTIMIZER_BYTES[(optimizer, precision)]
    params = a * psi / n if stage == 3 else a * psi
    grads = a * psi / n if stage >= 2 else a * psi
    state = k * psi / n if stage >= 1 else k * psi
    return {"params": params, "grads": grads, "optimizer": state, "total": params + grads + state}


def zero_bytes(psi: float, n: int, stage: int, bytes_per_value: int = 4) -> float:
    """Bytes one rank sends per step: 2 Psi (n-1)/n values (stages 1, 2), 3 Psi (n-1)/n (stage 3)."""
    check_stage(stage)
    checks.positive("psi", psi, unit="parameters", where="zero_bytes")
    checks.count("n", n, where="zero_bytes")
    checks.positive("bytes_per_value", bytes_per_value, where="zero_bytes")
    return (3 if stage == 3 else 2) * psi * (n - 1) / n * bytes_per_value


class Zero(Architecture):
    """``arch="zero(stage=2)"`` (``optimizer="sgd"`` with the Trainer's lr, momentum and weight
    decay, or ``"adam"`` with its lr and weight decay; ``precision="fp32"``, or ``"mixed"`` with
    Adam): an architecture of the Trainer."""

    name = "zero"
    provides = frozenset({"step"})  # it shards BSP's optimizer step; no model averages
    decodes = "none"  # shards of exact gradients: no compression, no schedule

    def __init__(self, stage: int = 1, optimizer: str = "sgd", precision: str = "fp32"):
        check_stage(stage)
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"ZeRO optimizer {optimizer!r} is not known; valid: {', '.join(OPTIMIZERS)}")
        if precision not in VALUE_BYTES:
            raise ValueError(f"ZeRO precision {precision!r} is not known; valid: {', '.join(VALUE_BYTES)}")
        if precision == "mixed" and optimizer != "adam":
            raise ValueError("precision='mixed' is the paper's mixed-precision Adam; use optimizer='adam'")
        self.stage, self.optimizer, self.precision = stage, optimizer, precision

    def exchange(self, comm, model, optimizer, setup) -> "ZeroExchange":
        """This rank's :class:`ZeroExchange` for the stage, optimizer and precision."""
        return ZeroExchange(comm, model, optimizer.param_groups[0], self.stage, self.optimizer, self.precision)

    def time(self, nbytes: float, workers: int, link, network=None) -> float:
        """Closed-form seconds of one step's messages: a ring reduce-scatter and all-gather of
        ``nbytes`` (a ring all-reduce, :func:`commlab.arch.ring.cost`), 1.5 times that at stage 3. The run's
        ``network`` does not enter: every message is on ``link``."""
        return (1.5 if self.stage == 3 else 1.0) * ring.cost(nbytes, workers, get_link(link))

    def __repr__(self) -> str:
        return f"Zero(stage={self.stage}, optimizer={self.optimizer!r}, precision={self.precision!r})"


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


class ZeroExchange(Exchange):
    """One rank's ZeRO: the chunk it owns, its optimizer over that chunk, the gathers and the
    reduce-scatter (see the module doc). ``memory()`` counts what the rank holds."""

    def __init__(self, comm, model, settings: dict, stage: int, optimizer: str, precision: str = "fp32"):
        self.comm, self.stage, self.mixed = comm, stage, precision == "mixed"
        self.group = Group(comm, range(comm.world_size))
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.shapes = [p.shape for p in self.params]
        self.numel = sum(p.numel() for p in self.params)
        self.span = bounds(self.numel, comm.world_size)[comm.rank]
        a, b = self.span
        self.dtype = torch.bfloat16 if self.mixed else self.params[0].dtype  # the working precision
        flat = torch.cat([p.detach().reshape(-1) for p in self.params])
        self.master = torch.nn.Parameter(flat[a:b].clone())  # what the optimizer updates, fp32
        if optimizer == "adam":
            self.optimizer = torch.optim.Adam([self.master], lr=settings["lr"], weight_decay=settings["weight_decay"])
        else:
            self.optimizer = torch.optim.SGD([self.master], lr=settings["lr"], momentum=settings["momentum"],
                                             weight_decay=settings["weight_decay"])
        self.grad_chunk = None  # stages 2, 3: the reduced gradient of the chunk, kept between steps
        if self.mixed:  # the model computes in bf16; its inputs are cast on the way in
            model.register_forward_pre_hook(lambda m, args: tuple(
                x.to(self.dtype) if torch.is_tensor(x) and x.is_floating_point() else x for x in args))
        if stage < 3:  # the model's parameters become views of one flat buffer in the working precision
            self.flat = flat.to(self.dtype)
            self._point(self.flat)
            if not self.mixed:
                self.master.data = self.flat[a:b]  # fp32: the optimizer's chunk is the model's own
            self.work = self.flat[a:b]
        else:
            self.flat = None
            self.work = self.master.detach() if not self.mixed else self.master.detach().to(self.dtype)
            self._release()
            model.register_forward_hook(self._after_forward)

    # ----- parameters -----------------------------------------------------------------
    def _point(self, flat: torch.Tensor) -> None:
        offset = 0
        for p, shape in zip(self.params, self.shapes):
            n = shape.numel()
            p.data = flat[offset:offset + n].view(shape)
            offset += n

    def _gather(self) -> None:
        """All-gather the chunks into whole parameters (stage 3, before forward and backward)."""
        self._point(self.group.all_gather(self.work, self.numel))

    def _release(self) -> None:
        for p in self.params:
            p.data = torch.empty(0, dtype=p.dtype, device=p.device)

    def _after_forward(self, module, inputs, output) -> None:
        """Release the parameters; gather them again when backward reaches the model's output."""
        self._release()
        if torch.is_tensor(output) and output.requires_grad:
            output.register_hook(self._before_backward)

    def _before_backward(self, grad):
        self._gather()
        return grad

    def begin(self, flops: float) -> bool:
        """Stage 3 gathers the parameters before the forward; never charges compute itself."""
        if self.stage == 3:
            self._gather()
        return False

    # ----- the step -------------------------------------------------------------------
    def step(self, model, optimizer) -> None:
        """Reduce-scatter the gradient, step the optimizer on this rank's chunk, all-gather (stages 1-2)."""
        grad = torch.cat([(p.grad if p.grad is not None else torch.zeros(s, dtype=self.dtype)).reshape(-1)
                          for p, s in zip(self.params, self.shapes)])
        reduced = self.group.reduce_scatter(grad, op="avg").clone()
        del grad
        if self.stage >= 2:  # only the chunk's gradient is kept
            self.grad_chunk = reduced
            for p in self.params:
                p.grad = None
        self.master.grad = reduced.to(self.master.dtype)
        self.optimizer.step()
        self.master.grad = None
        if self.stage < 3:
            if self.mixed:
                self.work.copy_(self.master.detach())
            self.flat.copy_(self.group.all_gather(self.work, self.numel))
        else:
            self.work = self.master.detach().to(self.dtype) if self.mixed else self.master.detach()
            self._release()

    def average(self, tensors):
        """Always ValueError: ZeRO shards BSP's step and does not average models."""
        raise ValueError("ZeRO shards BSP's gradient step; it does not average models (use an all-reduce arch)")

    def evaluating(self, model):
        """A context in which ``model`` is whole for evaluation on every rank: stage 3 rebuilds it
        off the record (an all-reduce of the zero-padded chunks that is neither timed nor counted)."""
        return _Whole(self) if self.stage == 3 else nullcontext()

    def memory(self) -> dict:
        """Bytes this rank holds between steps: parameters (working precision), gradients, and
        optimizer state (with the fp32 master chunk when the model computes in bf16)."""
        held = [p.data for p in self.params]  # stage 3: released to empty tensors between steps
        params = _nbytes([self.work, *held]) if self.stage == 3 else _nbytes([self.flat])  # stages 1, 2: views of flat
        grads = _nbytes([self.grad_chunk, *(p.grad for p in self.params)])
        state = _nbytes(v for s in self.optimizer.state.values() for v in s.values()
                        if torch.is_tensor(v) and v.dim() > 0) + (_nbytes([self.master]) if self.mixed else 0)
        return {"params": params, "grads": grads, "optimizer": state, "total": params + grads + state}

    def __repr__(self) -> str:
        return f"ZeroExchange(stage={self.stage}, chunk={self.master.numel()} of {self.numel}, mixed={self.mixed})"


class _Whole:
    def __init__(self, exchange: ZeroExchange):
        self.x = exchange

    def __enter__(self):
        x = self.x
        a, b = x.span
        flat = torch.zeros(x.numel, dtype=x.work.dtype)
        flat[a:b] = x.work
        x._point(x.comm.unrecorded_all_reduce(flat))
        return self

    def __exit__(self, *exc):
        self.x._release()
        return False
