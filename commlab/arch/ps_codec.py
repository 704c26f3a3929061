"""Compression on a parameter server's two links: double compression.

Worker w pushes C(g_w) (the bytes of a payload, as :mod:`commlab.compress` counts them; its
compressor may carry worker-side error feedback, "+ef"). What is compressed is fused: g_w is the
flat gradient of every parameter tensor, and each server's piece of it is one payload, keyed by
the shard (one compressed push per shard and step, never one per tensor), so a push pays one
message's start-up as an uncompressed one does; the Trainer's ``compress_per="tensor"`` is
refused over a parameter server (:mod:`commlab.rules`). The server decompresses the pushes it
applies and combines them as the compressor says (mean, majority vote, DIANA's shifts, ...).
When replies are compressed too (double quantization, Yu et al., NeurIPS 2019; DoubleSqueeze,
Tang et al., ICML 2019), the server keeps x^_w, the copy of its shard that worker w holds,
and answers w with

    r_w = Q(x - x^_w),     x^_w <- x^_w + Q^{-1}(r_w)     (the worker does the same update)

so what Q leaves out of one reply stays in x - x^_w and goes in a later one: server-side
error feedback, built in (the reply compressor therefore takes no "+ef"). As with any error
feedback, Q must be a contraction, E||e - Q(e)||^2 < ||e||^2 (top-k, fp16, QSGD with enough
levels; Karimireddy et al., ICML 2019): an unbiased Q with variance factor above 1, such as
QSGD with 4 levels on 512-element buckets, makes x - x^_w grow at every reply and diverge.
"""
from __future__ import annotations

import torch

from ..compress.base import Payload


class PSCodec:
    """``push``: the workers' compressor (None: raw gradients); ``reply``: the compressor of
    the server's answers (None: raw parameters). One codec per rank; keys are the shard and,
    for replies, the worker."""

    def __init__(self, push=None, reply=None):
        self.push, self.reply = push, reply
        self.held: dict = {}  # (shard, worker) -> x^ : the parameters the worker holds

    # ----- worker side
    def encode_push(self, piece: torch.Tensor, shard: int) -> torch.Tensor:
        """A push as sent: the raw piece, or the bytes of its compressed payload (keyed by shard)."""
        return piece if self.push is None else self.push.compress(piece, key=shard).to_bytes()

    def decode_reply(self, msg: torch.Tensor, shard: int, worker: int, start: torch.Tensor) -> torch.Tensor:
        """The worker's new piece ``shard`` from a reply (``start``: its initial piece)."""
        if self.reply is None:
            return msg
        held = self.held.setdefault((shard, worker), start.detach().clone())
        return held.add_(self.reply.decompress(Payload.from_bytes(msg)).to(held.dtype).reshape(held.shape)).clone()

    # ----- server side
    def decode_push(self, msg: torch.Tensor, shape) -> object:
        """A push as the server keeps it until applied: the tensor, or the decoded Payload."""
        if self.push is None:
            return msg
        p = Payload.from_bytes(msg)
        if tuple(p.shape) != tuple(shape):
            raise ValueError(f"a compressed push of shape {tuple(p.shape)} for a shard of shape {tuple(shape)}")
        return p

    def combine(self, pushes: list, shard: int) -> torch.Tensor:
        """The aggregate of the buffered pushes (in worker order)."""
        if self.push is None:
            g = pushes[0].clone()
            for t in pushes[1:]:
                g.add_(t)
            return g.div_(len(pushes))
        return self.push.combine(pushes, key=shard).float()

    def encode_reply(self, param: torch.Tensor, shard: int, worker: int, start: torch.Tensor) -> torch.Tensor:
        """A reply: the piece raw, or the compressed difference to the copy worker ``worker`` holds
        (that copy then moves by what the worker decodes)."""
        if self.reply is None:
            return param.detach().clone()
        held = self.held.setdefault((shard, worker), start.detach().clone())
        p = self.reply.compress(param.detach() - held, key=worker)
        held.add_(self.reply.decompress(p).to(held.dtype).reshape(held.shape))
        return p.to_bytes()
