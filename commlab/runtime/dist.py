"""The torch.distributed runtime: Gloo processes on CPUs, NCCL processes on GPUs.

commlab writes no transport of its own: every byte goes through torch.distributed.
A point-to-point message is a small header (dtype, shape, departure time on the
simulated clock) followed by the payload, so a receiver needs to know nothing in
advance and a shape mismatch is an error, never a silently wrong buffer. Headers use
tag ``2 * tag``; payloads ``2 * tag + 1 + 2**16 * code``, where ``code`` is derived from the
payload's number of elements and dtype (NCCL has no tags and relies on per-pair ordering
instead). User tags are 0 <= tag < 2**15. Only payload bytes are counted in ``comm.stats``.

A non-blocking receive posts the header at once and the payload when waited on, so
wait for receives from the same source and tag in the order they were posted. A receive
into a preallocated buffer, ``irecv(src, out=buf)``, posts the payload at once too, on
the tag of buf's size: Gloo then moves the payload as soon as the sender sends it,
without waiting for this rank to read the header first (the difference between a
ring all-reduce at half and at full speed). A sender whose payload has another size
uses another tag, so it is never written into ``buf`` (Gloo would abort the process);
the header, which comes first, makes ``wait()`` raise a ValueError naming both ranks.
Keep the Work of an ``isend`` until it is waited on: dropping it lets Gloo cancel the send.

NCCL has no receive from any source, which ``recv_any`` and ``recv_first`` (the asynchronous
parameter-server policies: ASP, SSP, backup workers, round-robin) need. So on NCCL the
headers travel over a Gloo process group of the same ranks, made when the Comm is built
(``headers``), and only the payloads over NCCL. A Gloo receive from any source reads the
first header to arrive and names its sender; the payload is then received from that sender
over NCCL, with its size and dtype known from the header. Headers and payloads between two
ranks are each delivered in the order they were sent (Gloo without tags, NCCL per pair), and
every header is followed by the receive of its own payload before the next header from that
sender is read, so no payload is ever matched to another message's header, and nothing is
posted that may never be matched (a pending NCCL receive would hold up later NCCL work on its
stream). Tags are ignored on NCCL, as before: messages between two ranks are matched in the
order they were sent. The header costs one small TCP message instead of one NCCL message
(which needed a copy to the CPU anyway, to read the shape).
"""
from __future__ import annotations

import zlib
from datetime import timedelta

import torch
import torch.distributed as dist

from .. import checks
from .comm import Comm, Work, check_into
from .errors import CommTimeout

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool]
MAX_DIMS = 8
HEADER = 3 + MAX_DIMS  # dtype code, ndim, shape..., departure time
TAGS = 1 << 15  # user tags 0..TAGS-1; payload tags carry a 14-bit code of the size above bit 16

OPS = {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX,
       "min": dist.ReduceOp.MIN, "prod": dist.ReduceOp.PRODUCT}


class DistComm(Comm):
    """A rank of a torch.distributed process group (backend "gloo" or "nccl")."""

    def __init__(self, rank: int, world_size: int, backend: str, clock=None, device="cpu", headers=None,
                 timeout: float | None = None):
        """``headers``: a Gloo process group that carries the headers (NCCL makes one; every rank
        builds its Comm at the same point, since making a group is collective). ``timeout``:
        seconds that group waits for a peer (default: the default group's)."""
        super().__init__(rank, world_size, clock, device)
        self.backend = backend
        if backend == "nccl" and headers is None:
            headers = header_group(timeout)
        self._headers = headers  # None: headers go with the payloads
        self._tags = backend != "nccl" and headers is None  # separate channels pair messages in order only
        self._unposted: dict[tuple[int, int], int] = {}  # (src, tag) -> receives whose payload waits for its header

    # ----- headers --------------------------------------------------------------------
    def _header(self, tensor: torch.Tensor, depart: float) -> torch.Tensor:
        if tensor.dtype not in DTYPES:
            raise TypeError(f"cannot send dtype {tensor.dtype}; valid: {', '.join(map(str, DTYPES))}")
        if tensor.dim() > MAX_DIMS:
            raise ValueError(f"cannot send a tensor of {tensor.dim()} dimensions; at most {MAX_DIMS}")
        h = torch.zeros(HEADER, dtype=torch.float64)
        h[0], h[1], h[-1] = DTYPES.index(tensor.dtype), tensor.dim(), depart
        h[2:2 + tensor.dim()] = torch.tensor(tensor.shape, dtype=torch.float64)
        return h.to(self._header_device)

    @property
    def _header_device(self):
        return torch.device("cpu") if self._headers is not None else self.device

    @staticmethod
    def _parse(h: torch.Tensor):
        h = h.cpu().tolist()
        ndim = int(h[1])
        return DTYPES[int(h[0])], tuple(int(s) for s in h[2:2 + ndim]), h[-1]

    def _kw(self, tag: int) -> dict:
        """Keyword arguments of a header's send or receive."""
        if self._headers is not None:
            return {"group": self._headers}
        if not self._tags:
            return {}
        if not checks.is_int(tag) or not 0 <= tag < TAGS:
            raise ValueError(f"tag must be an integer in 0..{TAGS - 1} on {self.backend}, got {tag!r}")
        return {"tag": 2 * tag}

    def _payload_kw(self, tag: int, numel: int, dtype) -> dict:
        """The payload's tag: odd, and different for payloads of another size or dtype."""
        if not self._tags:
            return {}
        code = zlib.crc32(f"{numel} {dtype}".encode()) % (1 << 14)
        return {"tag": self._kw(tag)["tag"] + 1 + (code << 16)}

    # ----- point to point -------------------------------------------------------------
    def _p2p(self, call, what: str):
        """Run a torch.distributed point-to-point call; a failure (a peer that crashed or closed
        its connection, a timeout) names this rank and the peer: Gloo's own message names neither."""
        try:
            return call()
        except RuntimeError as e:
            kind = CommTimeout if "timed out" in str(e).lower() else RuntimeError
            raise kind(f"rank {self.rank} failed {what}: {e}") from e

    def _transport_isend(self, tensor, dst, tag, depart):
        header = self._header(tensor, depart)
        payload = tensor.to(self.device).contiguous()
        what = f"sending a message to rank {dst} (tag {tag})"
        works = [self._p2p(lambda: dist.isend(header, dst, **self._kw(tag)), what)]
        if payload.numel():
            kw = self._payload_kw(tag, payload.numel(), payload.dtype)
            works.append(self._p2p(lambda: dist.isend(payload, dst, **kw), what))

        def finish(keep=(header, payload)):  # keep the buffers alive until sent
            for w in works:
                self._p2p(w.wait, what)

        return Work(finish)

    def _payload(self, header, src, tag, out=None):
        """Receive the payload a header announced, into ``out`` if given (checked first)."""
        dtype, shape, depart = self._parse(header)
        numel = torch.Size(shape).numel()
        if out is not None:
            check_into(out, dtype, numel, self.rank, src, tag)
        buf = self._buffer(out) if out is not None else torch.empty(shape, dtype=dtype, device=self.device)
        if numel:
            self._p2p(lambda: dist.recv(buf, src, **self._payload_kw(tag, numel, dtype)),
                      f"waiting for a message from rank {src} (tag {tag})")
        return src, self._unstage(buf, out), depart

    def _buffer(self, out):
        """Where a payload for ``out`` lands: out itself, or a staging copy on this device."""
        return out if out.device == self.device and out.is_contiguous() else torch.empty(
            out.shape, dtype=out.dtype, device=self.device)

    @staticmethod
    def _unstage(buf, out):
        if out is None or buf is out:
            return buf
        return out.copy_(buf)

    def _transport_irecv(self, src, tag, out=None):
        header = torch.empty(HEADER, dtype=torch.float64, device=self._header_device)
        what = f"waiting for a message from rank {src} (tag {tag})"
        work = self._p2p(lambda: dist.irecv(header, src, **self._kw(tag)), what)
        key = (src, tag)
        if out is None or not self._tags or not out.numel() or self._unposted.get(key):
            # the payload is posted once the header is read; a later receive from the same
            # source and tag must not post its payload before this one's
            self._unposted[key] = self._unposted.get(key, 0) + 1

            def finish():
                self._p2p(work.wait, what)
                self._unposted[key] -= 1
                return self._payload(header, src, tag, out)

            return finish

        buf = self._buffer(out)
        early = self._p2p(lambda: dist.irecv(buf, src, **self._payload_kw(tag, out.numel(), out.dtype)), what)

        def finish_early():
            self._p2p(work.wait, what)
            dtype, shape, depart = self._parse(header)
            check_into(out, dtype, torch.Size(shape).numel(), self.rank, src, tag)
            self._p2p(early.wait, what)
            return src, self._unstage(buf, out), depart

        return finish_early

    def _transport_recv_any(self, tag):
        """The first header from any rank (over Gloo: the header group on NCCL), then its payload."""
        open_ = sorted({src for (src, _), n in self._unposted.items() if n})
        if self._headers is not None and open_:  # its header could be taken here, its payload not
            raise RuntimeError(f"rank {self.rank} called recv_any with receives from rank(s) {open_} still open; on "
                               f"{self.backend} messages between two ranks are matched in order: wait for them first")
        header = torch.empty(HEADER, dtype=torch.float64)
        src = self._p2p(lambda: dist.recv(header, None, **self._kw(tag)),
                        f"waiting for a message from any rank (tag {tag})")
        return self._payload(header, src, tag)

    # ----- collectives ----------------------------------------------------------------
    def _agree(self, clock, tensor, what):
        """One tiny MAX all-reduce carries both: (size, dtype, shape) and their negatives, which
        agree on every rank only if all ranks have the same (the shape enters as a CRC32 of its
        repr, so (2, 3) and (3, 2) differ, as on threads), and the clock."""
        values = [] if clock is None else [clock]
        if tensor is not None:
            n = float(tensor.numel())
            code = float(DTYPES.index(tensor.dtype)) if tensor.dtype in DTYPES else -1.0
            shape = float(zlib.crc32(repr(tuple(tensor.shape)).encode()))
            values += [n, code, shape, -n, -code, -shape]
        if not values:
            return None
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        got = t[len(values) - 6:] if tensor is not None else None
        if got is not None and not torch.equal(got[:3], -got[3:]):
            raise ValueError(f"{what} needs the same shape and dtype on every rank; rank {self.rank} has "
                             f"{tuple(tensor.shape)} {tensor.dtype}, and sizes range from {-got[3].item():g} "
                             f"to {got[0].item():g} elements")
        return None if clock is None else t[0].item()

    def _transport_all_reduce(self, tensor, op):
        buf = tensor if tensor.device == self.device and tensor.is_contiguous() else tensor.to(self.device).contiguous()
        dist.all_reduce(buf, op=OPS[op])
        if op == "avg":
            buf.div_(self.world_size) if buf.is_floating_point() else buf.floor_divide_(self.world_size)
        if buf is not tensor:
            tensor.copy_(buf)

    def _transport_all_gather(self, tensor):
        buf = tensor.to(self.device).contiguous()
        out = [torch.empty_like(buf) for _ in range(self.world_size)]
        dist.all_gather(out, buf)
        return out

    def _transport_broadcast(self, tensor, src):
        buf = tensor if tensor.device == self.device and tensor.is_contiguous() else tensor.to(self.device).contiguous()
        dist.broadcast(buf, src)
        if buf is not tensor:
            tensor.copy_(buf)

    def _transport_barrier(self):
        if self.backend == "nccl":
            dist.barrier(device_ids=[self.device.index])
        else:
            dist.barrier()


def header_group(timeout: float | None = None):
    """A Gloo group of every rank, for the headers of an NCCL Comm (collective: all ranks call it).
    Without ``timeout`` it waits as long as the default group (torch keeps that on the backend's
    options; if this torch hides it, torch's default for new groups applies)."""
    if timeout is None:
        try:
            world = dist.group.WORLD
            device = torch.device("cuda") if dist.get_backend() == "nccl" else torch.device("cpu")
            timeout = world._get_backend(device).options._timeout.total_seconds()
        except (AttributeError, RuntimeError, ValueError):
            timeout = None
    kw = {} if timeout is None else {"timeout": timedelta(seconds=timeout)}
    return dist.new_group(backend="gloo", **kw)
