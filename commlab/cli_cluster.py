"""The command line's ``simulate`` and ``advise``: a cluster from the flags, the model to put on
it (a built-in name, or a profile file with ``--profile``), and the printed results; and the
checks of a flag's name and the sentence wrapping the commands share. :mod:`commlab.cli` builds
the parser and dispatches here."""
from __future__ import annotations

import textwrap

from . import own_model
from . import sim
from .parallel.configs import MODELS as LARGE


def say(text: str, width: int = 100) -> None:
    """Print a sentence of the command's report in lines of at most ``width`` characters (a
    refusal with its valid choices runs to hundreds), continued lines indented."""
    print(textwrap.fill(text, width, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False))


def profile_or_name(p, a, names):
    """--profile's file read as a Profile (mapped to --device if given), else --model checked
    against ``names``; says where a profile's seconds come from."""
    if a.profile is not None and a.model is not None:
        p.error(f"give --model or --profile, not both (--model {a.model!r}, --profile {a.profile!r})")
    if a.profile is None:
        if a.device is not None:
            p.error("--device maps a measured profile (--profile) to another device; the built-in models are "
                    "profiles of the survey's RTX 2080 Ti")
        a.model = a.model or "resnet50"
        check_name(p, "--model", a.model, names)
        return a.model
    try:
        profile = sim.load_profile(a.profile)
        if a.device is not None:
            profile = sim.to_device(profile, a.device)
    except (ValueError, FileNotFoundError) as e:
        p.error(f"--profile: {e}")
    where = sim.describe(profile)
    cpu = str(profile.about.get("device", "")).startswith("cpu") and a.device is None
    say(where + ("; each worker is simulated as that CPU (give --device v100, a100, h100 or h200 to map the "
                 "profile to a GPU)" if cpu else ""))
    memory = profile.about.get("memory")
    if memory:
        from .sim.step_memory import per_worker

        held = per_worker(memory, "momentum")
        say(f"each worker holds {held['total'] / 1e9:.3g} GB at batch {profile.batch} with momentum SGD: parameters "
            f"{held['parameters'] / 1e9:.3g}, gradients {held['gradients'] / 1e9:.3g}, momentum "
            f"{held['optimizer'] / 1e9:.3g}, activations saved for backward {held['activations'] / 1e9:.3g} (measured; "
            "Adam adds as much again as the momentum)")
    return profile


def check_name(p, flag, value, valid):
    if value not in valid:
        p.error(f"{flag} {value!r} is unknown; valid: {', '.join(valid)}")


def cluster_from(p, a):
    for flag, v in (("--gpus", a.gpus), ("--gpus-per-node", a.gpus_per_node)):
        if v < 1:
            p.error(f"{flag} {v} must be >= 1")
    g = a.gpus_per_node
    if a.gpus % g:
        hint = f"; for one node of {a.gpus} GPUs give --gpus-per-node {a.gpus}" if a.gpus < g else ""
        p.error(f"--gpus {a.gpus} must be a multiple of --gpus-per-node {g} (whole nodes){hint}")
    try:
        return sim.Cluster(a.gpus // g, g, intra=a.intra, inter=a.net), g
    except ValueError as e:
        p.error(str(e))


def advise_command(p, a) -> int:
    from .advisor import advise

    model = profile_or_name(p, a, [*sim.BUILTINS, *LARGE])
    if a.batch is not None and (a.batch < 1 or not isinstance(model, str) or model not in LARGE):
        p.error(f"--batch {a.batch} sets the sequences per step of a large model ({', '.join(LARGE)}), an integer "
                ">= 1" + ("; a profile has its own batch" if a.profile else ""))
    if a.top < 1:
        p.error(f"--top {a.top} must be >= 1 (rows to print)")
    cluster, _ = cluster_from(p, a)
    try:
        memory = sim.MEMORY_GB.get(a.device, 80.0) if a.device else 80.0
        if a.profile and isinstance(model, sim.Profile) and model.about.get("memory"):
            say(f"each worker is checked against {memory:g} GB of GPU memory"
                + (f" (the {a.device}'s data sheet)" if a.device in sim.MEMORY_GB else
                   " (no --device named: an 80 GB GPU assumed; --device v100, a100, h100 or h200 names yours)"))
        table = advise(model, cluster, target=a.target, budget=a.budget, batch=a.batch, memory_gb=memory)
    except ValueError as e:
        p.error(str(e))
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_colwidth", 200):
        # the Trainer's own specs: a row runs as Trainer(workers=..., sync=..., arch=..., compress=..., schedule=...)
        cols = ["sync", "arch", "compress", "schedule", "workers", *(["parallel"] if "parallel" in table else []),
                "iteration_s", "penalty", "time_s"]
        say(f"{a.profile or a.model} on {cluster}, {a.target} rounds of BSP's progress: {len(table)} configurations")
        print()
        print(table[cols].head(a.top).round(4).to_string())
        first = table.iloc[0]
        print()
        say("why the first is first: " + first["reasoning"])
        runs = set(table["runs"].head(a.top))
        say("each row runs as printed: commlab.Trainer(workers=..., sync=..., arch=..., compress=..., schedule=...)"
            if runs == {"as printed"} else f"these rows are simulated: {'; '.join(sorted(runs))}")
        for what, why in table.attrs["left_out"].items():
            say(f"not ranked: {what} ({why})")
        if a.profile:
            for line in own_model.provenance(model, a.profile, first, a.net):
                say(line)
    return 0


def simulate_command(p, a) -> int:
    model = profile_or_name(p, a, list(sim.BUILTINS))
    cluster, g = cluster_from(p, a)
    it = sim.iteration(model, cluster, method=a.method)
    timeline = it.timeline
    comm = timeline[timeline.stream == "comm"]
    print(f"{a.profile or a.model} on {cluster}, {a.method}:")
    print(f"  {it.time * 1e3:.4g} ms per iteration; compute {it.single * 1e3:.4g} ms; {len(comm)} messages, "
          f"{comm.bytes.sum() / 1e6:.4g} MB; communication ends {comm.end.max() * 1e3:.4g} ms after backward starts")
    print(f"  speedup {it.speedup:.3g} over one GPU ({it.speedup / a.gpus:.0%} of linear), "
          f"{it.throughput:.5g} samples/s")
    sizes = sorted({2 ** k for k in range(a.gpus.bit_length()) if 2 ** k <= a.gpus} | {a.gpus})
    rows = []
    for n in sizes:
        if n > g and n % g:
            continue
        gn = min(g, n)
        c = sim.Cluster(n // gn, gn, intra=a.intra, inter=a.net)
        rows.append((n, {m: sim.iteration(model, c, method=m).speedup for m in sim.METHODS}))
    width = max(len(m) for m in sim.METHODS)
    print("\nspeedup over one GPU\n" + "GPUs".rjust(5) + "".join(m.rjust(width + 1) for m in sim.METHODS))
    for n, sp in rows:
        print(str(n).rjust(5) + "".join(f"{sp[m]:.2f}".rjust(width + 1) for m in sim.METHODS))
    return 0
