"""Exercises of chapter 11: infrastructure and clusters."""
from __future__ import annotations

from ...infra.faults import job_mtbf, young_daly
from ...infra.inference import kv_bytes
from ...arch.innetwork import ina_wire_bytes
from . import check_number

# Exercise 1: 4,096 GPUs that each fail every 50,000 hours; a checkpoint takes 90 s.
CHECKPOINT_CASE = dict(gpus=4096, gpu_mtbf_hours=50_000, checkpoint_s=90.0)

# Exercise 2: LLaMA-2 70B's KV cache for a prompt of 2,048 tokens, in bf16.
KV_CASE = dict(model="llama2-70b", tokens=2048)

# Exercise 3: 8 workers aggregate 100 MB of float32 gradient; the switch's packets carry 64 values
# and 54 bytes of headers. Bytes a ring all-reduce sends per worker, over the bytes in-network
# aggregation sends per worker.
INA_CASE = dict(workers=8, nbytes=100e6, elements=64, header=54)


def checkpoint_minutes(case=None) -> float:
    """Young/Daly's checkpoint interval for the case's job, in minutes."""
    c = case or CHECKPOINT_CASE
    return young_daly(c["checkpoint_s"], job_mtbf(c["gpus"], c["gpu_mtbf_hours"] * 3600.0)) / 60


def kv_gb(case=None) -> float:
    """The case's KV cache in GB."""
    c = case or KV_CASE
    return kv_bytes(c["model"], c["tokens"]) / 1e9


def ring_over_ina(case=None) -> float:
    """Bytes a ring all-reduce sends per worker over those in-network aggregation sends."""
    c = case or INA_CASE
    ring = 2 * (c["workers"] - 1) / c["workers"] * c["nbytes"]
    return ring / ina_wire_bytes(c["nbytes"], c["elements"], c["header"])


def check_checkpoint_interval(answer) -> bool:
    """Exercise 1: the Young/Daly checkpoint interval, in minutes."""
    return check_number("checkpoint interval (minutes)", answer, checkpoint_minutes(), rel=0.01,
                        hint="The job's MTBF is the GPU's divided by the number of GPUs; then sqrt(2 C M).")


def check_kv_cache(answer) -> bool:
    """Exercise 2: GB of KV cache to move from the prefill GPUs to the decode GPUs."""
    return check_number("KV cache (GB)", answer, kv_gb(), rel=0.01,
                        hint="2 (keys and values) x 80 layers x 8 key/value heads x 128 per head x tokens x 2 bytes.")


def check_ina_bytes(answer) -> bool:
    """Exercise 3: the ring's bytes per worker over in-network aggregation's."""
    return check_number("ring bytes / INA bytes", answer, ring_over_ina(), rel=0.01,
                        hint="A ring sends 2 (p-1)/p n; the switch gets n once, in packets of 256 bytes of values "
                             "plus 54 of headers.")
