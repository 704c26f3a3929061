"""The wire form: exact bytes out and back, the documented header size, clear errors on bad
bytes, and a shared payload's decodings (one per compressor class, then reused)."""
import threading

import pytest
import torch

from commlab.compress import get
from commlab.compress.payload import Payload, header_bytes


def test_payload_round_trip_and_nbytes():
    p = Payload({"norms": torch.tensor([1.5, 2.0]), "bits": torch.arange(7, dtype=torch.uint8),
                 "idx": torch.tensor([[1, 2], [3, 4]], dtype=torch.int32), "h": torch.ones(3, dtype=torch.bfloat16),
                 "b": torch.tensor([True, False])}, (3, 4, 5), torch.bfloat16)
    data = p.to_bytes()
    assert data.dtype == torch.uint8 and data.dim() == 1
    assert p.nbytes == data.numel() == header_bytes(3, p.parts) + 8 + 7 + 16 + 6 + 2
    q = Payload.from_bytes(data)
    assert q.shape == (3, 4, 5) and q.dtype == torch.bfloat16 and list(q.parts) == list(p.parts)
    for k in p.parts:
        assert q[k].dtype == p[k].dtype and torch.equal(q[k], p[k])


def test_header_size_documented():
    assert header_bytes(1, ["norms", "bits"]) == 29
    assert Payload.skip((10,), torch.float32).nbytes == 8
    assert Payload.from_bytes(Payload.skip((), torch.float16).to_bytes()).shape == ()


def test_from_bytes_rejects_bad_input():
    with pytest.raises(ValueError, match="1-D uint8"):
        Payload.from_bytes(torch.zeros(4))
    data = Payload({"a": torch.ones(3)}, (3,), torch.float32).to_bytes()
    with pytest.raises(ValueError, match="arrived"):
        Payload.from_bytes(torch.cat([data, data[:1]]))


def test_a_shared_payload_is_decoded_once_per_compressor_class():
    data = get("qsgd(levels=4)").compress(torch.randn(100, generator=torch.Generator().manual_seed(0))).to_bytes()
    shared, plain = Payload.shared_from_bytes(data), Payload.from_bytes(data)
    assert plain.decodings is None and repr(shared) == repr(plain)  # the memo is not part of what it shows
    a, b = get("qsgd(levels=4)"), get("qsgd(levels=4)")
    first = a.decoded(shared)
    assert b.decoded(shared) is first  # another rank's compressor of the same class reuses it
    assert torch.equal(first, a.decoded(plain)) and a.decoded(plain) is not a.decoded(plain)
    values, lock = shared.decodings
    assert list(values) == [type(a)] and isinstance(lock, type(threading.Lock()))
