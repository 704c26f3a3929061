"""The GPU's packing (fused multiply-and-sum kernels, nothing on the host) writes exactly the
CPU's bytes. Without a GPU it is run on CPU tensors by making the CPU take the GPU's path;
with one, the compressors also run on CUDA tensors and stay there."""
import pytest
import torch

from commlab.compress import COMPRESSORS, bitpack, get


@pytest.fixture
def gpu_kernels(monkeypatch):
    """Every device takes the GPU's path (torch only, no numpy)."""
    monkeypatch.setattr(bitpack, "_fused", lambda device: True)


@pytest.mark.parametrize("k", range(1, 8))
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1001, 40_003])
def test_fused_pack_writes_the_cpu_bytes_and_reads_them_back(k, n):
    v = torch.randint(0, 2 ** k, (n,), generator=torch.Generator().manual_seed(n + k))
    cpu = bitpack.pack_bits(v, k)
    assert torch.equal(bitpack.pack_fused(v, k), cpu)
    assert torch.equal(bitpack.pack_fused(v.to(torch.uint8), k), cpu)
    assert torch.equal(bitpack.pack_fused(torch.cat([v[:1], v]).to(torch.uint8)[1:], k), cpu)  # unaligned start
    assert torch.equal(bitpack.unpack_fused(cpu, k, n), v.to(torch.int32))


def test_fused_signs_trits_and_tables(gpu_kernels, monkeypatch):
    x = torch.randn(1003, generator=torch.Generator().manual_seed(0))
    t = torch.randint(0, 3, (1003,), generator=torch.Generator().manual_seed(1))
    table = torch.tensor([0.5, -0.5])
    gpu = (bitpack.pack_signs(x), bitpack.unpack_signs(bitpack.pack_signs(x), 1003),
           bitpack.unpack_signs(bitpack.pack_signs(x), 1003, table), bitpack.pack_trits(t),
           bitpack.unpack_bits(bitpack.pack_bits(t, 2), 2, 1003, torch.arange(4.0)))
    monkeypatch.setattr(bitpack, "_fused", lambda device: False)
    cpu = (bitpack.pack_signs(x), bitpack.unpack_signs(bitpack.pack_signs(x), 1003),
           bitpack.unpack_signs(bitpack.pack_signs(x), 1003, table), bitpack.pack_trits(t),
           bitpack.unpack_bits(bitpack.pack_bits(t, 2), 2, 1003, torch.arange(4.0)))
    assert gpu[1].dtype == cpu[1].dtype == torch.bool
    assert all(torch.equal(a, b) for a, b in zip(gpu, cpu))


def test_the_fused_path_never_touches_numpy(gpu_kernels, monkeypatch):
    import numpy as np

    def refuse(*a, **k):
        raise AssertionError("numpy was called on the GPU's path")

    v = torch.randint(0, 32, (999,))
    monkeypatch.setattr(np, "packbits", refuse)
    monkeypatch.setattr(np, "unpackbits", refuse)
    monkeypatch.setattr(torch.Tensor, "numpy", refuse)
    for k in range(1, 6):
        bitpack.unpack_bits(bitpack.pack_bits(v % (1 << k), k), k, 999)
    bitpack.unpack_signs(bitpack.pack_signs(torch.randn(999)), 999)


FIXED_WIDTH = [n for n in COMPRESSORS.names() if n not in ("rotated",)]  # rotated's default is a Huffman code


@pytest.mark.parametrize("spec", FIXED_WIDTH + ["qsgd(levels=4)", "laq(levels=7)", "rotated(coding='packed')"])
def test_every_compressor_sends_the_same_bytes_on_the_gpu_kernels(spec, gpu_kernels, monkeypatch):
    x = torch.randn(4, 1000, generator=torch.Generator().manual_seed(3))
    on_gpu_path = get(spec)
    p = on_gpu_path.compress(x.clone(), key="w")
    y = on_gpu_path.decompress(p)
    monkeypatch.setattr(bitpack, "_fused", lambda device: False)
    on_cpu_path = get(spec)
    q = on_cpu_path.compress(x.clone(), key="w")
    assert p.nbytes == q.nbytes
    assert torch.equal(p.to_bytes(), q.to_bytes())
    assert torch.equal(y, on_cpu_path.decompress(q))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("spec", FIXED_WIDTH + ["threshold(tau=0.5, signs=True)", "qsgd(levels=4)", "laq(levels=7)"])
def test_on_cuda_tensors_compressors_stay_on_the_gpu_and_send_the_cpu_bytes(spec):
    x = torch.randn(4, 1000, generator=torch.Generator().manual_seed(3))
    p = get(spec).compress(x.cuda(), key="w")
    assert all(t.device.type == "cuda" for t in p.parts.values()), spec
    y = get(spec).decompress(p)
    assert y.device.type == "cuda" and y.shape == x.shape
    q = get(spec).compress(x, key="w")
    assert p.nbytes == q.nbytes


def test_payload_parts_are_made_on_the_input_device():
    """NCCL sends GPU tensors only: a part built with torch.tensor([...]) and no device lands on the CPU
    (randk's seed and threshold's tau once did). Found here without a GPU: every torch.tensor call inside
    a function of commlab/compress names its device."""
    import ast
    import pathlib

    import commlab.compress

    missing = []
    for path in sorted(pathlib.Path(commlab.compress.__file__).parent.glob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for call in ast.walk(fn):
                if (isinstance(call, ast.Call) and ast.unparse(call.func) == "torch.tensor"
                        and "device" not in {k.arg for k in call.keywords}):
                    missing.append(f"{path.name}:{call.lineno} {ast.unparse(call)}")
    assert not missing, missing
