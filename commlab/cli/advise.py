"""``python -m commlab advise``: the configurations of :func:`commlab.advisor.advise` ranked by
predicted time to a target on a cluster, with the reasoning of the first, what was left out and
why, and, for a profile file, what is measured and what modelled (:func:`commlab.own_model.provenance`)::

    python -m commlab advise --model resnet50 --gpus 32 --net 10GbE --target 5000
"""
from __future__ import annotations

from .. import own_model
from .. import sim
from ..parallel.configs import MODELS as LARGE
from .cluster import add_cluster_flags, add_profile_flags, cluster_from, profile_or_name, say
from .names import epilog

NAME = "advise"


def add(sub, fmt) -> None:
    """The ``advise`` subcommand."""
    v = sub.add_parser(NAME, help="rank configurations by predicted time to a target", formatter_class=fmt,
                       epilog=epilog(("advised model", "cluster link")))
    add_cluster_flags(v, "a built-in profile or a large model (default resnet50)")
    v.add_argument("--target", type=int, default=1000, help="rounds BSP needs to reach the target")
    v.add_argument("--budget", type=float, default=None, help="seconds; keep what fits in it")
    v.add_argument("--batch", type=int, default=None, help="sequences per step (large models)")
    v.add_argument("--top", type=int, default=10, help="rows to print")
    add_profile_flags(v)


def run(p, a) -> int:
    """Rank, and print the first --top rows with the reasons."""
    from ..advisor import advise

    if a.batch is not None and (a.batch < 1 or a.profile is not None or (a.model or "resnet50") not in LARGE):
        # refused before a profile is read, so that nothing is printed ahead of the reason
        p.error(f"--batch {a.batch} sets the sequences per step of a large model ({', '.join(LARGE)}), an integer "
                ">= 1" + ("; a profile has its own batch" if a.profile else ""))
    if a.top < 1:
        p.error(f"--top {a.top} must be >= 1 (rows to print)")
    model = profile_or_name(p, a, [*sim.BUILTINS, *LARGE])
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
            # the Trainer's clock has one link: inside the node when the cluster is one node, else between nodes
            link = a.intra if cluster.nodes == 1 else a.net
            for line in own_model.provenance(model, a.profile, first, link, a.device):
                head, colon, command = line.partition(": python -m commlab train ")
                if colon:  # the command on a line of its own, unwrapped: it runs as printed, pasted whole
                    say(head + ":")
                    print("python -m commlab train " + command)
                else:
                    say(line)
    return 0
