"""The real executor: backward hooks hand ready gradients to a communication thread per rank.

As PyTorch DDP's reducer and Horovod's background thread do, each worker rank runs one
communication thread beside its training thread. A hook on every parameter
(``register_post_accumulate_grad_hook``) counts the gradients backward has finished; when a
layer's are all there, the messages that need it may go. The thread sends the step's messages
in the order :func:`~commlab.schedule.dispatch.dispatch` fixed before any rank started (the
same on every rank, so every rank joins the same collective), each through the rank's exchange
(``exchange.message(m, tensors)``: an all-reduce of the bucket, or a push and pull to the
parameter servers), while backward goes on below. ``step`` waits for the last message and
applies the optimizer (or the servers' parameters).

Scheduling never changes the math: every gradient element is averaged once, by the same
collective; with the threads runtime's native all-reduce, which sums in rank order, losses are
bit for bit those of ``schedule=None``.

Simulated time (``comm.clock``): the compute stream is charged layer by layer from the profile's
FLOP shares of the step's compute; the communication stream is the rank's clock while the
thread runs, a message starting at ``max(stream free, T0 + ready(m))`` with T0 the start of
backward. The step ends at ``max(last message, end of backward)``; the next forward starts at
once, or for a plan with ``forward_waits`` layer by layer as parameters arrive
(:func:`~commlab.schedule.dispatch.next_forward`). Each message is logged (``timeline``: step,
message, layers, bytes; ready, start and end on the simulated clock, NaN without one; and
wall_start, wall_end: real seconds since the step's forward began, where overlap shows on Gloo).
"""
from __future__ import annotations

import math
import queue
import threading
import time

import torch

from ..arch.exchange import Exchange
from ..runtime.errors import Aborted, CommTimeout
from .dispatch import next_forward
from .profile import ready_times


def segments(plan, profile, numels) -> list[list[tuple[int, int, int]]]:
    """For each piece of ``plan``: (parameter position, first element, end element) it covers."""
    out = []
    for piece in plan.pieces:
        a, b, at, segs = piece.start // profile.itemsize, piece.stop // profile.itemsize, 0, []
        for pos in profile.params[piece.layer]:
            lo, hi = max(a, at), min(b, at + numels[pos])
            if hi > lo:
                segs.append((pos, lo - at, hi - at))
            at += numels[pos]
        out.append(segs)
    return out


def flat_ranges(messages, plan, profile, numels) -> list[list[tuple[int, int]]]:
    """Each message as [start, stop) ranges of the flat parameter vector (parameters() order)."""
    offsets = [sum(numels[:i]) for i in range(len(numels))]
    segs = segments(plan, profile, numels)
    return [[(offsets[pos] + a, offsets[pos] + b) for i in m.pieces for pos, a, b in segs[i]] for m in messages]


class Engine:
    """One rank's communication engine for ``plan`` on ``model`` (see the module doc)."""

    def __init__(self, comm, model, exchange, profile, plan, messages, timeout: float = 120.0):
        self.comm, self.exchange, self.profile, self.plan = comm, exchange, profile, plan
        self.messages, self.timeout = list(messages), timeout
        self.params = [p for p in model.parameters() if p.requires_grad]
        segs = segments(plan, profile, [p.numel() for p in self.params])
        self.segments = [[s for i in m.pieces for s in segs[i]] for m in self.messages]
        self.layer_of = {pos: l for l, ps in enumerate(profile.params) for pos in ps}
        if sorted(self.layer_of) != list(range(len(self.params))):
            raise ValueError("the profile's layers do not cover the model's parameters exactly once")
        work = sum(profile.forward_s) + sum(profile.backward_s)
        self.shares = ([f / work for f in profile.forward_s], [b / work for b in profile.backward_s])
        self.ready = [threading.Event() for _ in range(profile.layers)]
        self.backward_done = threading.Event()  # set by finish(): a layer not ready by then never will be
        self.left = [0] * profile.layers
        self.hooks = [p.register_post_accumulate_grad_hook(self._hook(pos)) for pos, p in enumerate(self.params)]
        self.jobs, self.results = queue.Queue(), queue.Queue()
        self.timeline, self.step_no, self.arrive, self.backward_end = [], 0, None, 0.0
        self.params_out = None
        self.owner = threading.current_thread()  # the rank's training thread: if it dies, this one leaves
        self.thread = threading.Thread(target=self._loop, daemon=True, name=f"commlab-comm-rank{comm.rank}")
        self.thread.start()

    def _hook(self, pos: int):
        layer = self.layer_of[pos]

        def done(param):
            self.left[layer] -= 1
            if self.left[layer] == 0:
                self.ready[layer].set()
        return done

    # ---- training thread ---------------------------------------------------------------------
    def begin(self, flops: float) -> None:
        """Before a mini-batch's forward: charge its compute (``flops``) layer by layer, arm the thread."""
        self.step_no += 1
        self.backward_done.clear()
        for l, ev in enumerate(self.ready):
            ev.clear()
            self.left[l] = len(self.profile.params[l])
        clock, t_b = self.comm.clock, None
        if clock is not None:
            seconds = clock.charge(flops / clock.network.flops)
            t_f = [seconds * s for s in self.shares[0]]
            t_b = [seconds * s for s in self.shares[1]]
            if self.arrive is None:
                clock.now += sum(t_f)
            else:
                clock.now = max(clock.now, next_forward(t_f, self.backward_end, self.arrive,
                                                        self.plan.forward_waits))
        self.wall_begin = time.perf_counter()
        self.jobs.put((self.step_no, None if clock is None else clock.now, t_b))

    def finish(self) -> None:
        """After backward: wait for the step's last message; leaves new parameters in params_out."""
        self.backward_done.set()
        try:
            outcome = self.results.get(timeout=self.timeout)
        except queue.Empty:
            raise RuntimeError(f"rank {self.comm.rank}: the communication thread did not finish step {self.step_no} "
                               f"in {self.timeout:g} s") from None
        if isinstance(outcome, (Aborted, CommTimeout)):  # another rank failed first: launch blames that one
            raise outcome
        if isinstance(outcome, BaseException):
            raise RuntimeError(f"rank {self.comm.rank}: a scheduled message failed in step {self.step_no}: "
                               f"{outcome}") from outcome
        self.params_out, times = outcome
        clock = self.comm.clock
        if clock is not None:
            start, t_b = times
            self.backward_end = start + sum(t_b)
            self.arrive = [start] * self.profile.layers
            for row in self.timeline[-len(self.messages):]:
                for l in row["layers"]:
                    self.arrive[l] = max(self.arrive[l], row["end"])
            clock.now = max(clock.now, self.backward_end)

    def close(self) -> None:
        """Stop the communication thread (waiting up to ``timeout``) and remove the backward hooks."""
        self.jobs.put(None)
        self.thread.join(timeout=self.timeout)
        for h in self.hooks:
            h.remove()

    # ---- communication thread ----------------------------------------------------------------
    def _wait(self, layer: int, step: int, deadline: float) -> None:
        while not self.ready[layer].wait(0.05):
            if self.backward_done.is_set() and not self.ready[layer].is_set():
                raise ValueError(f"rank {self.comm.rank}: layer {self.profile.names[layer]!r} got no gradient in the "
                                 f"backward of step {step} (a parameter the loss does not use); a schedule sends "
                                 "each layer when backward finishes it: freeze unused parameters "
                                 "(requires_grad=False) or use schedule=None")
            if time.monotonic() > deadline:
                raise TimeoutError(f"rank {self.comm.rank}: the gradient of layer {self.profile.names[layer]!r} "
                                   f"was not ready {self.timeout:g} s into step {step}")

    def _loop(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=0.5)
            except queue.Empty:  # a rank that failed never closes its engine: do not outlive it
                if self.owner.is_alive():
                    continue
                return
            if job is None:
                return
            step, start, t_b = job
            try:
                self.results.put((self._send_all(step, start, t_b), (start, t_b)))
            except BaseException as e:  # handed to the training thread, which raises it
                self.results.put(e)

    def _send_all(self, step: int, start, t_b):
        clock, deadline, params_out = self.comm.clock, time.monotonic() + self.timeout, []
        ready_at = None if clock is None else ready_times(t_b, start)
        for k, (m, segs) in enumerate(zip(self.messages, self.segments)):
            for l in m.layers:
                self._wait(l, step, deadline)
            # a whole parameter goes in its shape (PowerSGD compresses matrices), a part of one flat
            tensors = [g if (a, b) == (0, g.numel()) else g.view(-1)[a:b]
                       for g, (_, a, b) in zip((self.params[pos].grad for pos, _, _ in segs), segs)]
            begun, wall = math.nan, time.perf_counter()
            if clock is not None:
                clock.now = max(clock.now, max(ready_at[l] for l in m.layers))
                begun = clock.now
            out = self.exchange.message(k, tensors)
            if self.exchange.gives == "gradients":
                with torch.no_grad():
                    for t, o in zip(tensors, out):
                        if o is not t:  # an exchange may have averaged in place
                            t.copy_(o)
            else:
                params_out.append(out)
            self.timeline.append({
                "step": step, "message": k, "layers": list(m.layers), "bytes": m.nbytes,
                "ready": math.nan if clock is None else max(ready_at[l] for l in m.layers), "start": begun,
                "end": math.nan if clock is None else clock.now,
                "wall_start": wall - self.wall_begin, "wall_end": time.perf_counter() - self.wall_begin})
        return params_out


class ScheduledExchange(Exchange):
    """A BSP exchange whose messages an :class:`Engine` sends during backward."""

    def __init__(self, inner: Exchange, engine: Engine):
        self.inner, self.engine = inner, engine

    @property
    def compressor(self):
        """The inner exchange's compressor, or None."""
        return getattr(self.inner, "compressor", None)

    @property
    def timeline(self) -> list[dict]:
        """The engine's log of every message sent: step, layers, bytes, ready/start/end times."""
        return self.engine.timeline

    def begin(self, flops: float) -> bool:
        """Hand the mini-batch's FLOPs to the engine, which charges compute to the clock: True."""
        self.engine.begin(flops)
        return True

    def step(self, model, optimizer) -> None:
        """Wait for the step's messages; apply the optimizer (gradients) or copy back the parameters."""
        engine = self.engine
        engine.finish()
        if self.inner.gives == "gradients":
            optimizer.step()
            return
        with torch.no_grad():
            for out, segs in zip(engine.params_out, engine.segments):
                for o, (pos, a, b) in zip(out, segs):
                    engine.params[pos].view(-1)[a:b].copy_(o.reshape(-1))

    def average(self, tensors):
        """Always ValueError: model averaging (local SGD) runs with schedule=None."""
        raise ValueError("a scheduled exchange averages gradients during backward (BSP); model averaging "
                         "(local SGD) runs with schedule=None")

    def close(self) -> None:
        """Close the engine, then the inner exchange."""
        self.engine.close()
        self.inner.close()

    def __repr__(self) -> str:
        return f"ScheduledExchange({self.inner!r}, {self.engine.plan.name})"
