"""A step traced on this CPU and mapped to a GPU by the roofline of :mod:`commlab.sim.to_device`,
beside what that GPU measured.

    python benchmarks/bench_to_device.py            # ResNet-50 (batch 64) and BERT-Base (batch 32, 128 tokens)

Measured beside it: the H200 this project was lent once (``benchmarks/measured/h200_*.json``,
``python -m commlab profile ... --device cuda``: CUDA events per layer, torch 2.11), and one V100's
ResNet-50 throughput in GRACE's runs (409.5 images/s at batch 64 with TensorFlow; Xu et al.,
ICDCS 2021, ``../shared/data``'s setting): what the mapping should come near, never fitted to.
Prints per model and device the mapped step, the measured step and their ratio, and for the H200
the layers whose mapped share of the step is furthest from the measured share.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from commlab import models
from commlab.schedule.profile import Profile, layer_flops
from commlab.sim.op_trace import trace_ops
from commlab.sim.to_device import to_device

HERE = Path(__file__).parent / "measured"
MEASURED = {("resnet50", "h200"): HERE / "h200_resnet50_b64.json", ("bert-base", "h200"): HERE / "h200_bert_base_b32.json"}
V100_RESNET50 = 64 / 409.5  # seconds of one step at batch 64 (GRACE's single V100)


def traced(name: str) -> Profile:
    """The model's operators traced on this CPU, as a profile with no seconds of its own."""
    torch.manual_seed(0)
    if name == "resnet50":
        model, x = models.resnet50(device="cpu"), torch.randn(64, 3, 224, 224)
        call = lambda: model(x)  # noqa: E731
    else:
        model = models.bert("base", device="cpu")
        x = {"input_ids": torch.randint(0, 30522, (32, 128))}
        call = lambda: model(**x)  # noqa: E731
    from commlab.sim.measured import _default_loss

    names, _, positions = layer_flops(model, x)
    params = [p for p in model.parameters() if p.requires_grad]
    ops = trace_ops(model, call, _default_loss, names, positions, params)
    L = len(names)
    return Profile([0.0] * L, [0.0] * L, [0] * L, batch=64 if name == "resnet50" else 32, names=names,
                   about={"device": f"cpu ({torch.get_num_threads()} thread), operators traced", "ops": ops})


def main():
    torch.set_num_threads(1)
    rows = []
    for name in ("resnet50", "bert-base"):
        prof = traced(name)
        for device in ("v100", "a100", "h200"):
            mapped = to_device(prof, device)
            step = sum(mapped.forward_s) + sum(mapped.backward_s)
            measured = None
            if (name, device) in MEASURED:
                doc = json.loads(MEASURED[(name, device)].read_text())
                measured = doc["about"]["step_s"]
                layers = {layer["name"]: layer["forward_s"] + layer["backward_s"] for layer in doc["layers"]}
                share = {n: (f + b) / step for n, f, b in zip(mapped.names, mapped.forward_s, mapped.backward_s)}
                total = sum(layers.values())
                worst = sorted(share, key=lambda n: -abs(share[n] - layers.get(n, 0) / total))[:3]
                far = "; ".join(f"{n}: {100 * share[n]:.1f}% mapped, {100 * layers.get(n, 0) / total:.1f}% measured"
                                for n in worst)
            elif name == "resnet50" and device == "v100":
                measured, far = V100_RESNET50, "GRACE's V100 (TensorFlow), whole step only"
            else:
                far = ""
            rows.append((name, device, step, measured, far))
            print(f"{name:>9} {device:>5}: mapped {1e3 * step:8.2f} ms"
                  + (f", measured {1e3 * measured:8.2f} ms, mapped/measured {step / measured:.2f}; {far}"
                     if measured else ""), flush=True)


if __name__ == "__main__":
    main()
