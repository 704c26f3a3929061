"""The wire form of a compressed tensor, :class:`Payload`: named parts, the original shape and
dtype, and their exact bytes (``to_bytes`` / ``from_bytes``, :func:`header_bytes`), which is what
any Comm sends. :mod:`commlab.compress.base` re-exports it beside the Compressor interface.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

import torch

# dtype <-> one-byte code in the header. The order is the wire format: only append.
_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
           torch.float32, torch.float64, torch.bool)
_CODE = {d: i for i, d in enumerate(_DTYPES)}


def header_bytes(ndim: int, names) -> int:
    """Bytes of a payload's header: 4 (original dtype, ndim, number of parts, a reserved byte)
    + 4 per dimension of the original shape (uint32) + per part 6 (dtype, numel as uint32, name
    length) + the part's name in ASCII. A 1-D tensor sent as parts "norms" and "bits" has a
    4 + 4 + (6 + 5) + (6 + 4) = 29-byte header."""
    return 4 + 4 * ndim + sum(6 + len(n) for n in names)


@dataclass
class Payload:
    """The wire form of one compressed tensor: named 1-D parts (packed bits as uint8, indices
    as int32/int16, values as fp16/fp32, scalars as 1-element tensors) and the original shape
    and dtype. Parts are flattened on construction; a decoder reshapes them from ``shape``.

    ``nbytes`` is exactly ``to_bytes().numel()``: the parts' bytes plus :func:`header_bytes`.
    ``to_bytes()`` is one flat uint8 tensor (header, then the parts in order, native byte
    order), so a payload travels through any Comm send/recv or variable-size all-gather, and
    ``Payload.from_bytes`` reads it back. ``Payload.skip(shape, dtype)`` is an empty payload
    (nothing sent this round; only the header crosses the wire)."""

    parts: dict
    shape: tuple
    dtype: torch.dtype
    # (decodings by compressor class, their lock) for a payload that ranks share (shared_from_bytes)
    decodings: tuple | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        self.shape = tuple(int(s) for s in self.shape)
        for k, v in self.parts.items():
            if not isinstance(v, torch.Tensor):
                raise TypeError(f"payload part {k!r} must be a tensor, got {type(v).__name__}")
            if v.dtype not in _CODE:
                raise TypeError(f"payload part {k!r} has dtype {v.dtype}; wire dtypes: {_DTYPES}")
            if not k.isascii() or not 0 < len(k) < 256:
                raise ValueError(f"payload part name {k!r} must be 1..255 ASCII characters")
        self.parts = {k: v.reshape(-1) for k, v in self.parts.items()}
        if len(self.parts) > 255 or len(self.shape) > 255:
            raise ValueError("a payload has at most 255 parts and 255 dimensions")

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.parts[name]

    @classmethod
    def skip(cls, shape, dtype) -> "Payload":
        """An empty payload (no parts) for a tensor of ``shape`` and ``dtype``: only the header travels."""
        return cls({}, shape, dtype)

    @property
    def numel(self) -> int:
        """Elements of the original tensor (the product of ``shape``)."""
        return math.prod(self.shape)

    @property
    def header_bytes(self) -> int:
        """Bytes of the header :meth:`to_bytes` writes for this shape and these parts."""
        return header_bytes(len(self.shape), self.parts)

    @property
    def nbytes(self) -> int:
        """Exact wire bytes: the header plus every part's elements times its element size."""
        return self.header_bytes + sum(v.numel() * v.element_size() for v in self.parts.values())

    def to_bytes(self) -> torch.Tensor:
        """The payload as one flat uint8 tensor: header (dtype, shape, part names and sizes), then the parts."""
        head = [_CODE[self.dtype], len(self.shape), len(self.parts), 0]
        for s in self.shape:
            head += list(int(s).to_bytes(4, "little"))
        for k, v in self.parts.items():
            head += [_CODE[v.dtype]] + list(v.numel().to_bytes(4, "little")) + [len(k)] + list(k.encode("ascii"))
        device = next(iter(self.parts.values())).device if self.parts else "cpu"
        chunks = [torch.tensor(head, dtype=torch.uint8, device=device)]
        chunks += [v.contiguous().view(torch.uint8) for v in self.parts.values()]
        return torch.cat(chunks)

    @classmethod
    def from_bytes(cls, data: torch.Tensor) -> "Payload":
        """Read back a payload written by :meth:`to_bytes`; ValueError for a malformed buffer."""
        if data.dtype != torch.uint8 or data.dim() != 1:
            raise ValueError(f"Payload.from_bytes expects a 1-D uint8 tensor, got {data.dtype} of shape "
                             f"{tuple(data.shape)}")
        first = data[:4].tolist()
        if len(first) < 4:
            raise ValueError(f"payload of {data.numel()} bytes is shorter than its 4-byte header")
        dcode, ndim, nparts, _ = first
        pos = 4 + 4 * ndim
        shape = tuple(int.from_bytes(bytes(data[4 + 4 * i:8 + 4 * i].tolist()), "little") for i in range(ndim))
        metas = []
        for _ in range(nparts):
            code, *numel, namelen = data[pos:pos + 6].tolist()
            name = bytes(data[pos + 6:pos + 6 + namelen].tolist()).decode("ascii")
            metas.append((name, _DTYPES[code], int.from_bytes(bytes(numel), "little")))
            pos += 6 + namelen
        parts = {}
        for name, dtype, n in metas:
            size = n * torch.empty((), dtype=dtype).element_size()
            # clone: a dtype view of a uint8 slice needs an aligned storage offset
            parts[name] = data[pos:pos + size].clone().view(dtype)
            pos += size
        if pos != data.numel():
            raise ValueError(f"payload header describes {pos} bytes but {data.numel()} arrived")
        return cls(parts, shape, _DTYPES[dcode])

    @classmethod
    def shared_from_bytes(cls, data: torch.Tensor) -> "Payload":
        """:meth:`from_bytes` for a payload that several ranks of one process hold at once (the
        threads runtime's gather): it remembers its decodings, so N ranks decode it once
        (:meth:`Compressor.decoded`)."""
        p = cls.from_bytes(data)
        p.decodings = ({}, threading.Lock())
        return p
