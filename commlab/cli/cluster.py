"""What ``simulate`` and ``advise`` share: the flags of a cluster and of the model to put on it (a
built-in name, or a profile file with ``--profile``), read into :mod:`commlab.sim`'s objects, and
the sentence wrapping of their reports; and, with ``train`` too, a link flag's measured form,
``link(gbits=G, latency_us=L)`` (:func:`link_arg`)."""
from __future__ import annotations

import textwrap

from .. import checks, sim
from ..net.link import LinkModel
from ..spec import parse_one
from .names import check_name

MEASURED_LINK = "link(gbits=G, latency_us=L)"  # a link you measured, where a flag takes a link name


def say(text: str, width: int = 100) -> None:
    """Print a sentence of the command's report in lines of at most ``width`` characters (a
    refusal with its valid choices runs to hundreds), continued lines indented."""
    print(textwrap.fill(text, width, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False))


def add_cluster_flags(parser, model_help: str) -> None:
    """--model, --gpus, --gpus-per-node, --net and --intra."""
    parser.add_argument("--model", default=None, help=model_help)
    parser.add_argument("--gpus", type=int, default=32)
    parser.add_argument("--gpus-per-node", type=int, default=4)
    parser.add_argument("--net", default="100GbIB", help=f"the link between nodes (a cluster link, or {MEASURED_LINK}: "
                                                       "one you measured, e.g. with osu_bw and osu_latency)")
    parser.add_argument("--intra", default="PCIe3-mgwfbp", help=f"the link inside a node (a cluster link, or "
                                                                f"{MEASURED_LINK})")


def link_arg(p, flag: str, value):
    """The link a flag names: ``value`` itself (a name, checked where it is used), or, written
    ``link(gbits=G, latency_us=L)``, a link you measured: one connection's data rate in Gb/s and
    one message's latency in microseconds, as ``osu_bw`` and ``osu_latency`` between two nodes
    report them (what MPI reaches over TCP elsewhere: :mod:`commlab.net.mpi_tcp`), as a LinkModel
    named by that text. Anything else in that form ends with ``p.error`` and the form."""
    if not isinstance(value, str) or not value.replace(" ", "").lower().startswith("link("):
        return value
    form = f"{flag} {value!r}: give {MEASURED_LINK}, a measured data rate in Gb/s and a latency in microseconds"
    try:
        spec = parse_one(value)
    except ValueError as e:
        p.error(f"{form} ({e})")
    if spec.args or set(spec.kwargs) != {"gbits", "latency_us"}:
        p.error(form)
    try:
        gbits = checks.positive("gbits", spec.kwargs["gbits"], unit="Gb/s")
        latency = checks.number("latency_us", spec.kwargs["latency_us"], 0, unit="microseconds")
    except (TypeError, ValueError) as e:
        p.error(f"{form} ({e})")
    return LinkModel.of_rate(gbits, latency * 1e-6, f"link(gbits={gbits:g}, latency_us={latency:g})")


def add_profile_flags(parser) -> None:
    """--profile and --device: a measured model instead of --model, on the GPU named."""
    parser.add_argument("--profile", default=None, help="a profile file (python -m commlab profile) "
                                                         "instead of --model")
    parser.add_argument("--device", default=None, choices=list(sim.RATES),
                        help="with --profile: the GPU each worker is, the profile's operators mapped to it by "
                             "a roofline (commlab.sim.to_device); without it, the device it was measured on")


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
        from ..sim.step_memory import per_worker

        held = per_worker(memory, "momentum")
        say(f"each worker holds {held['total'] / 1e9:.3g} GB at batch {profile.batch} with momentum SGD: parameters "
            f"{held['parameters'] / 1e9:.3g}, gradients {held['gradients'] / 1e9:.3g}, momentum "
            f"{held['optimizer'] / 1e9:.3g}, activations saved for backward {held['activations'] / 1e9:.3g} (measured; "
            "Adam adds as much again as the momentum)")
    return profile


def cluster_from(p, a):
    """The :class:`commlab.sim.Cluster` of --gpus whole nodes of --gpus-per-node, and the GPUs per node."""
    for flag, v in (("--gpus", a.gpus), ("--gpus-per-node", a.gpus_per_node)):
        if v < 1:
            p.error(f"{flag} {v} must be >= 1")
    g = a.gpus_per_node
    if a.gpus % g:
        hint = f"; for one node of {a.gpus} GPUs give --gpus-per-node {a.gpus}" if a.gpus < g else ""
        p.error(f"--gpus {a.gpus} must be a multiple of --gpus-per-node {g} (whole nodes){hint}")
    intra, inter = link_arg(p, "--intra", a.intra), link_arg(p, "--net", a.net)
    try:
        return sim.Cluster(a.gpus // g, g, intra=intra, inter=inter), g
    except ValueError as e:
        p.error(str(e))
