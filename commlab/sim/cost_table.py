"""A compressor's arithmetic as one implementation measured it: encode and decode seconds against size.

A compressor's declaration (:mod:`commlab.compress.cost`) describes this library's kernels. Another
implementation of the same compressor costs what it costs: a fused CUDA kernel, TensorFlow's ops
in GRACE, or a slow Python loop. ``sim.iteration(..., compress_costs=table)`` charges what a table
measured instead, the table as ``benchmarks/compress_costs.py --out costs.json`` writes it (or a
published microbenchmark in that form)::

    {"about": {"device": ..., ...},
     "compressors": {"topk": {"numel": [4096, ...], "encode_s": [...], "decode_s": [...]}, ...}}

**Between the sizes measured**, the seconds are interpolated linearly in log(size) and log(time);
below the smallest size, the smallest's time (a launch floor); above the largest, the largest's
time grown in proportion to the size. **Which entry**: the compressor's own name (``topk+ef``), else,
for a chain with error feedback, its inner compressor's (``topk``) and the note says the residual's
work is not in the table; the table's entries were measured with the registry's default
arguments, and the source says so. A compressor the table lacks is refused with the names it has.
**Decoding an all-gather** decodes every worker's payload: ``workers`` times the table's decode.
"""
from __future__ import annotations

import bisect
import json
import math
from pathlib import Path


class CostTable:
    """A measured table (module doc); :meth:`timer` is what :mod:`commlab.sim.compression` calls."""

    def __init__(self, doc: dict, origin: str = "a cost table"):
        if not isinstance(doc, dict) or not isinstance(doc.get("compressors"), dict) or not doc["compressors"]:
            raise ValueError(f"{origin}: a cost table is {{'about': ..., 'compressors': {{name: {{'numel': [...], "
                             "'encode_s': [...], 'decode_s': [...]}}}}}} (benchmarks/compress_costs.py writes one)")
        self.origin, self.about, self.rows = origin, dict(doc.get("about", {})), {}
        for name, row in doc["compressors"].items():
            try:
                n, e, d = (list(map(float, row[k])) for k in ("numel", "encode_s", "decode_s"))
            except (KeyError, TypeError, ValueError) as err:
                raise ValueError(f"{origin}: compressor {name!r} needs numel, encode_s and decode_s lists of "
                                 f"numbers ({type(err).__name__}: {err})") from None
            if not n or not (len(n) == len(e) == len(d)) or any(b <= a for a, b in zip(n, n[1:])) \
                    or min(n) <= 0 or min(e + d) <= 0:
                raise ValueError(f"{origin}: compressor {name!r}: numel must rise, and every size and second be "
                                 "> 0, in lists of one length")
            self.rows[name] = (n, e, d)

    @classmethod
    def load(cls, spec) -> "CostTable":
        """A CostTable from itself, a dict in the module's form, or the path of such a JSON file; an
        object that times like one (``entry`` and ``timer``: :class:`commlab.sim.grace_costs.GraceCosts`)
        as it is."""
        if isinstance(spec, CostTable) or (hasattr(spec, "entry") and hasattr(spec, "timer")):
            return spec
        if isinstance(spec, dict):
            return cls(spec)
        path = Path(spec)
        if not path.is_file():
            raise ValueError(f"compress_costs={str(spec)!r}: no such file; give a cost table (a dict) or its JSON "
                             "file (benchmarks/compress_costs.py --out costs.json)")
        try:
            return cls(json.loads(path.read_text()), str(path))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not JSON ({e})") from None

    def entry(self, name: str) -> tuple[str, str]:
        """(the table's entry for compressor ``name``, a note: empty, or what the entry leaves out)."""
        if name in self.rows:
            return name, ""
        inner = name.split("+")[0]
        if name.endswith("+ef") and inner in self.rows:
            return inner, f"'{name}' timed as the table's '{inner}' (the residual's work is not in the table)"
        raise ValueError(f"{self.origin} has no {name!r}" + (f" or {inner!r}" if inner != name else "")
                         + f"; it has {', '.join(sorted(self.rows))}")

    def seconds(self, name: str, numel: int) -> tuple[float, float]:
        """(encode, decode) seconds of one tensor of ``numel`` values by the table's entry for ``name``."""
        n, e, d = self.rows[self.entry(name)[0]]
        return _at(n, e, numel), _at(n, d, numel)

    def timer(self, device=None):
        """``timer(compressor, shape, workers) -> (encode, decode)`` for :mod:`commlab.sim.compression`
        (``device`` is not used: the table measured its own)."""
        def timer(compressor, shape, workers):
            encode, decode = self.seconds(compressor.name, math.prod(shape))
            gathers = any(kind == "allgather" for kind, _ in compressor.wire(tuple(shape)))
            return encode, decode * (workers if gathers else 1)
        timer.source = (f"measured ({self.origin}: {self.about.get('device', 'device not stated')}, "
                        "the registry's default arguments)")
        return timer


def _at(sizes: list, seconds: list, numel: float) -> float:
    """``seconds`` at ``numel`` by the module's rule."""
    if numel <= sizes[0]:
        return seconds[0]
    if numel >= sizes[-1]:
        return seconds[-1] * numel / sizes[-1]
    i = bisect.bisect_right(sizes, numel)
    a, b = math.log(sizes[i - 1]), math.log(sizes[i])
    w = (math.log(numel) - a) / (b - a)
    return math.exp((1 - w) * math.log(seconds[i - 1]) + w * math.log(seconds[i]))
