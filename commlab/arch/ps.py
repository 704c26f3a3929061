"""Parameter server: workers push gradients, servers own the parameters and send them back.

Li et al., "Scaling distributed machine learning with the parameter server" (OSDI 2014);
sharded and co-located as in BytePS (Jiang et al., OSDI 2020).

The flat parameter vector x of D elements is split into S near-equal pieces
(``torch.tensor_split``); server s owns piece x^(s) and runs plain SGD (``torch.optim.SGD``
with lr, momentum, weight decay) on it. Under the BSP policy one step is::

    push:  worker w sends g_w^(s), its gradient's piece s, to server s        (every s)
    apply: server s waits for all W pushes of step t, then
           x^(s) <- SGD(x^(s), (1/W) sum_w g_w^(s))
    pull:  server s sends x^(s) back to every worker; worker w concatenates the pieces

which is all-reduce BSP exactly (the average is summed in worker order, as the threads
runtime's all-reduce does). Every push is answered by one reply, the pull: a worker's loop
is ``push(g); x = pull()``, as in Li et al. A worker leaves by sending each server rank an
empty tensor (0 bytes, 1 message); a server returns once all W workers have left.

When a push is applied and when a pull is answered is the server's *policy*
(:mod:`commlab.arch.ps_policy`: BSP, ASP, SSP, backup workers, round-robin), and a policy
that names no worker makes the server take whichever push arrives first
(``comm.recv_first``). The server keeps each worker's clock (pushes taken so far).

Layouts (W workers, S servers):

* extra ranks (default): ranks 0..W-1 are the workers, W..W+S-1 the servers. Workers keep
  the ranks they have under every other architecture (rank 0 evaluates, data shards are
  indexed by rank); the servers are appended.
* co-located (``colocated=True``, S <= W): server s lives on worker rank s, BytePS's
  co-located mode. Under BSP a step is a push/pull exchange inside every rank: push, serve
  one round for the shard it hosts, pull. Only synchronous policies run co-located.

Messages follow the staggered schedule of :func:`commlab.arch.ps_layout.ps_sharded`: worker w
sends its j-th piece to server (w + j) mod S; server s answers worker (s + i) mod W in its
i-th reply; every rank takes its messages in the order they leave. Per BSP step, with
T(m) = alpha + m beta and n = 4D bytes:

* extra ranks: 2 max(W, S) T(n/S) (W >= 2; single server 2 W T(n)); a worker sends and
  receives n bytes, a server W n/S each way.
* co-located: 2 (W - 1) T(n/S) (:func:`commlab.arch.ps_layout.ps_colocated`); the piece of a
  worker's own shard stays local, so a rank hosting a server sends (W - 1) n/S + n (S-1)/S.

Those are the times of one step from a common start. Over many steps the steps overlap (a
worker answered early pushes its next gradient while the server still answers the others),
so k steps take at most k times as long (``tests/test_ps.py`` checks both).
"""
from __future__ import annotations


import torch

from ..flat import flatten, grads, unflatten_into
from .ps_codec import PSCodec
from .ps_layout import ServerPlacement
from .ps_policy import check_shards, get_policy

PUSH_TAG = 21  # worker -> server: a gradient piece, or an empty goodbye
PULL_TAG = 22  # server -> worker: the parameter piece answering a push


# ----- one shard's server --------------------------------------------------------------------
class ShardServer:
    """The state of one shard: its parameters and optimizer, each worker's clock, and the
    pushes and pulls in flight. Transport-free: the loops below feed it messages."""

    def __init__(self, shard: int, layout: ServerPlacement, params: torch.Tensor, lr: float, momentum: float = 0.0,
                 weight_decay: float = 0.0, policy="bsp", codec: PSCodec | None = None):
        self.shard, self.shards, self.workers = shard, layout.shards, layout.workers
        self.param = layout.pieces(params.detach())[shard].clone()
        self.start = self.param.clone()  # what every worker holds at first (for compressed replies)
        self.codec = codec or PSCodec()
        self.optimizer = torch.optim.SGD([self.param], lr=lr, momentum=momentum, weight_decay=weight_decay)
        self.policy = get_policy(policy)
        self.clocks = [0] * self.workers
        self.live = set(range(self.workers))
        self.buffered: dict[int, torch.Tensor] = {}
        self.waiting: set[int] = set()
        self.updates = 0
        self.version = [0] * self.workers  # updates made when each worker last pulled
        self.applied: list[tuple[int, int, int]] = []  # (worker, its step, staleness)
        self.dropped: list[tuple[int, int]] = []  # (worker, its step)

    def take(self, worker: int, msg: torch.Tensor) -> list[int]:
        """Handle a push (or an empty goodbye) from ``worker``; return the workers to answer now,
        in the staggered order."""
        if msg.numel() == 0:
            self.live.discard(worker)
        else:
            if worker in self.waiting:
                raise RuntimeError(f"worker {worker} pushed to shard {self.shard} twice without pulling")
            if self.codec.push is None and msg.shape != self.param.shape:
                raise ValueError(f"worker {worker} pushed {tuple(msg.shape)} to shard {self.shard}, "
                                 f"which holds {tuple(self.param.shape)}")
            self.clocks[worker] += 1
            self.waiting.add(worker)
            if self.policy.should_drop(self, worker):
                self.dropped.append((worker, self.clocks[worker]))
            else:
                self.buffered[worker] = self.codec.decode_push(msg, self.param.shape)
        if self.buffered and self.policy.should_apply(self):
            self.apply()
        ready = sorted((w for w in self.waiting if w not in self.buffered and self.policy.can_answer(self, w)),
                       key=lambda w: ((w - self.shard) % self.workers, w))
        self.waiting.difference_update(ready)
        for w in ready:
            self.version[w] = self.updates
        return ready

    def apply(self) -> None:
        """One SGD step with the aggregate of the buffered gradients (the average, summed in
        worker order; or the compressor's combine); logs (worker, its step, staleness) for each."""
        order = sorted(self.buffered)
        for w in order:
            self.applied.append((w, self.clocks[w], self.updates - self.version[w]))
        self.param.grad = self.codec.combine([self.buffered[w] for w in order], self.shard).to(self.param.dtype)
        self.optimizer.step()
        self.buffered.clear()
        self.updates += 1


def _serve_one(comm, server: ShardServer) -> list:
    """Take one message as the policy says, let the shard handle it, send the replies it
    allows (a copy of the parameters: they may change before a send completes)."""
    w = server.policy.next_worker(server)
    if w is None:
        senders = server.live - server.waiting  # a worker waiting for its reply cannot push
        if not senders:
            raise RuntimeError(f"shard {server.shard}: every live worker waits for a reply that policy "
                               f"{server.policy!r} does not give (clocks {server.clocks})")
        w, msg = comm.recv_first(senders, PUSH_TAG)
    else:
        msg = comm.recv(w, PUSH_TAG)
    if not 0 <= w < server.workers:
        raise RuntimeError(f"shard {server.shard} got a push from rank {w}, which is not a worker")
    ready = [r for r in server.take(w, msg) if r != comm.rank]
    return [comm.isend(server.codec.encode_reply(server.param, server.shard, r, server.start), r, PULL_TAG)
            for r in ready]


def run_server(comm, params: torch.Tensor, workers: int, shards: int = 1, *, lr: float, momentum: float = 0.0,
               weight_decay: float = 0.0, policy="bsp", codec: PSCodec | None = None) -> dict:
    """The loop of a server rank (extra-rank layout) until every worker has left.

    params: the full flat initial parameter vector (the server keeps its own piece).
    Returns {"role", "shard", "updates", "clocks", "applied", "dropped", "params", "stats", "sim"}:
    its log of applied (worker, step, staleness) and dropped (worker, step) pushes, its final
    piece, its traffic (``comm.stats``) and simulated time."""
    layout = ServerPlacement(workers, shards)
    layout.check_world(comm)
    shard = layout.shard_of(comm.rank)
    if shard is None:
        raise ValueError(f"rank {comm.rank} is not a server rank ({layout.describe()})")
    server = ShardServer(shard, layout, params, lr, momentum, weight_decay, policy, codec)
    check_shards(server.policy, shards)
    while server.live:
        for work in _serve_one(comm, server):  # the workers answered are waiting: safe to wait
            work.wait()
    return {"role": "server", "shard": shard, "updates": server.updates, "clocks": list(server.clocks),
            "applied": server.applied, "dropped": server.dropped, "params": server.param.detach().clone(),
            "stats": comm.stats.snapshot(), "sim": comm.now}


# ----- the worker's side -------------------------------------------------------------------
class PSClient:
    """A worker's handle: ``push(grad_flat)`` then ``pull() -> params_flat``; ``step(model)``
    does both for a model's gradients; ``close()`` says goodbye to the servers.

    On a co-located rank that hosts shard s the client also holds that shard's server, which
    serves one round inside ``pull()``. The gradient passed to ``push`` must not change until
    ``pull`` returns (its pieces may still be on the wire)."""

    def __init__(self, comm, params: torch.Tensor, workers: int, shards: int = 1, colocated: bool = False, *,
                 lr: float, momentum: float = 0.0, weight_decay: float = 0.0, policy="bsp",
                 codec: PSCodec | None = None):
        self.comm, self.layout = comm, ServerPlacement(workers, shards, colocated)
        self.codec = codec or PSCodec()
        if colocated and (self.codec.push is not None or self.codec.reply is not None):
            raise ValueError("compression over co-located servers is not supported; use colocated=False")
        self.start = self.layout.pieces(params.detach().reshape(-1))
        self.layout.check_world(comm)
        if comm.rank >= workers:
            raise ValueError(f"rank {comm.rank} is not a worker ({self.layout.describe()})")
        self.sizes = [p.numel() for p in self.layout.pieces(params.detach().reshape(-1))]
        check_shards(get_policy(policy), shards)
        self.server = None
        if colocated and self.layout.shard_of(comm.rank) is not None:
            self.server = ShardServer(comm.rank, self.layout, params.reshape(-1), lr, momentum, weight_decay, policy)
            if not self.server.policy.synchronous:
                raise ValueError(f"policy {self.server.policy!r} is asynchronous: co-located servers serve only "
                                 "inside their worker's step; use colocated=False (extra server ranks)")
        self._sends = None  # pushes (and co-located replies) in flight; None: no push to pull for

    def push(self, grad: torch.Tensor) -> None:
        """Send each piece of the flat gradient to its shard's server, staggered from shard (rank mod S)."""
        if self._sends is not None:
            raise RuntimeError("push() twice without pull(): every push is answered by one pull")
        if grad.numel() != sum(self.sizes):
            raise ValueError(f"pushed {grad.numel()} elements; the parameter vector has {sum(self.sizes)}")
        r, S, self._sends = self.comm.rank, self.layout.shards, []
        pieces = self.layout.pieces(grad.detach().reshape(-1))
        for j in range(S):
            s = (r + j) % S
            if self.server is not None and s == self.server.shard:
                self._deliver(self.server.take(r, pieces[s]))
            else:
                msg = self.codec.encode_push(pieces[s], s)
                self._sends.append(self.comm.isend(msg, self.layout.server_rank(s), PUSH_TAG))

    def _deliver(self, ready) -> None:
        """Answer the pulls the local shard allows after our own push (none under BSP, W > 1)."""
        ready = [w for w in ready if w != self.comm.rank]
        if ready:
            reply = self.server.param.detach().clone()
            self._sends += [self.comm.isend(reply, w, PULL_TAG) for w in ready]

    def pull(self) -> torch.Tensor:
        """Receive every shard's reply (a co-located one served first) and return the flat parameters."""
        if self._sends is None:
            raise RuntimeError("pull() without push(): a pull answers the last push")
        r, S, W = self.comm.rank, self.layout.shards, self.layout.workers
        if self.server is not None:  # serve this round until our own pull can be answered
            while r in self.server.waiting:
                self._sends += _serve_one(self.comm, self.server)
        out = [None] * S
        for s in sorted(range(S), key=lambda s: ((r - s) % W, s)):  # the order the replies leave
            if self.server is not None and s == self.server.shard:
                out[s] = self.server.param.detach().clone()
            else:
                msg = self.comm.recv(self.layout.server_rank(s), PULL_TAG)
                out[s] = self.codec.decode_reply(msg, s, r, self.start[s])
        for work in self._sends:
            work.wait()
        self._sends = None
        return torch.cat(out)

    def step(self, model: torch.nn.Module) -> None:
        """Push the model's gradients, pull the new parameters into the model."""
        self.push(flatten(grads(model)))
        with torch.no_grad():
            unflatten_into(self.pull(), trainable(model))

    def close(self) -> None:
        """Tell every server this worker is done (co-located servers need no goodbye)."""
        if self._sends is not None:
            raise RuntimeError("close() with a push not pulled")
        if not self.layout.colocated:
            bye = torch.empty(0)
            works = [self.comm.isend(bye, self.layout.server_rank((self.comm.rank + j) % self.layout.shards),
                                     PUSH_TAG) for j in range(self.layout.shards)]
            for work in works:
                work.wait()


def trainable(model: torch.nn.Module) -> list[torch.Tensor]:
    """The parameters a PS holds, in the order of :func:`commlab.flat.grads`."""
    return [p for p in model.parameters() if p.requires_grad]
