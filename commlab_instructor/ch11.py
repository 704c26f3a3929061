"""Reference solutions of chapter 11: infrastructure and clusters."""
from __future__ import annotations

VARIABLES = {"check_checkpoint_interval": "answer", "check_kv_cache": "answer", "check_ina_bytes": "answer"}


def checkpoint_interval():
    """Exercise 1: Young/Daly's interval sqrt(2 C M) in minutes, M the job's MTBF (4,096 GPUs)."""
    import math

    gpus, gpu_mtbf_s, C = 4096, 50_000 * 3600, 90.0
    M = gpu_mtbf_s / gpus                  # the job fails when any GPU does
    return math.sqrt(2 * C * M) / 60


def kv_cache():
    """Exercise 2: GB of KV cache: 2 (K, V) x 80 layers x 8 heads x 128 x 2,048 tokens x 2 bytes."""
    layers, kv_heads, head_dim, tokens, nbytes = 80, 8, 128, 2048, 2
    return 2 * layers * kv_heads * head_dim * tokens * nbytes / 1e9


def ina_bytes():
    """Exercise 3: a ring's 2 (p-1)/p n bytes per worker over the switch's n in packets with headers."""
    import math

    p, n, values, header = 8, 100e6, 64, 54
    ring = 2 * (p - 1) / p * n
    packets = math.ceil(n / (4 * values))          # 64 float32 values, 256 bytes, per packet
    return ring / (packets * (4 * values + header))
