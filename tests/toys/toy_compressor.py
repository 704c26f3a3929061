"""A toy compressor: the identity, summed in the all-reduce like a cast (4 bytes a value), with
the declarations a simulator reads: its payload's and its summed tensor's bytes, and its GPU work."""
import math

from commlab.compress import COMPRESSORS, Compressor, Payload
from commlab.compress.base import header_bytes
from commlab.compress.cost import CHECK, Cost, KernelWork

NAME = "identity"


class Identity(Compressor):
    """C(x) = x: every value as it is; aggregation "sum" (the all-reduce adds the payloads)."""
    name = NAME
    unbiased = True
    aggregation = "sum"

    def compress(self, t, key=None):
        return Payload({"values": self.check(t).reshape(-1)}, t.shape, t.dtype)

    def decompress(self, p):
        return p["values"].reshape(p.shape).to(p.dtype)

    def summable(self, t, key=None):
        return self.check(t).reshape(-1).clone()

    def from_summed(self, s, like, count):
        return (s / count).reshape(like.shape).to(like.dtype)

    def payload_bytes(self, shape, dtype=None):
        return header_bytes(len(shape), ["values"]) + 4 * math.prod(shape)

    def summed_bytes(self, shape, dtype=None):
        return 4 * math.prod(shape)

    def cost(self, shape):
        # encode: the NaN check and a copy (2 passes); decode: the division (2 passes)
        return Cost(CHECK + KernelWork(passes=2, launches=1), KernelWork(passes=2, launches=1))


def register():
    COMPRESSORS.register(NAME, Identity)
