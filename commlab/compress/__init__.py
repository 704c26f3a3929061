"""Compression: what goes on the wire. The compressors arrive with chapters 06 and 07."""
from __future__ import annotations

from ..spec import Registry

COMPRESSORS = Registry("compressor")
COMPRESSORS.plan(["fp16", "bf16", "qsgd", "terngrad", "signsgd", "signum", "onebit", "ef_signsgd", "natural",
                  "topk", "randk", "threshold", "dgc", "gtopk", "powersgd", "atomo", "ef"],
                 "compression chapters, issue 5")


def get(spec):
    """A compressor from a spec such as "qsgd(levels=16)" or "topk(0.01)+ef"; None means none."""
    return None if spec in (None, "none") else COMPRESSORS.build(spec)
