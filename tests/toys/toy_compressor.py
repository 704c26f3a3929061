"""A toy compressor: the identity, summed in the all-reduce like a cast (4 bytes a value)."""
from commlab.compress import COMPRESSORS, Compressor, Payload

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


def register():
    COMPRESSORS.register(NAME, Identity)
