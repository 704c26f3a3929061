"""A discrete-event simulator of whole data-parallel iterations on GPU clusters.

The simulated executor of docs/architecture.md's "one policy, two executors": it replays the schedule
policies of :mod:`commlab.schedule` (WFBP, fusion, MG-WFBP, ByteScheduler, P3) on per-layer
profiles and a cluster of nodes, GPUs and links, at thousands of GPUs::

    from commlab import sim
    c = sim.Cluster(nodes=8, gpus_per_node=4, intra="PCIe3-mgwfbp", inter="100GbIB-survey")
    it = sim.iteration("resnet50", c, method="mg_wfbp")       # or arch="ps", schedule="wfbp"
    it.time, it.throughput, it.speedup, it.timeline

Links are named in :data:`commlab.net.link.PROFILES` (nominal, measured in the literature:
:mod:`commlab.net.measured`, transports: :mod:`commlab.net.protocols`). Modules, one idea each:
:mod:`.devices` (profiles from FLOPs, scaled to a device's single-GPU throughput),
:mod:`.measured` (a profile timed layer by layer on this CPU or a GPU, with what each layer's
operators do, :mod:`.op_trace`, and the step's memory, :mod:`.step_memory`), :mod:`.to_device`
(a measured profile put on another device by a roofline per operator), :mod:`.profile_file`
(a profile saved as JSON and read back; a file wherever a built-in name is taken),
:mod:`.cluster` (nodes and links, and which collective model and why),
:mod:`.closed_forms` (closed forms), :mod:`.events` (the message-level event loop),
:mod:`.programs` (every point-to-point message of a collective), :mod:`.frameworks` (what
Horovod, ByteScheduler and BytePS add per operation), :mod:`.iteration`, :mod:`.survey` (the
simulator against the quantitative survey's measured grid), :mod:`.grace` (the compression model
against GRACE's measured ResNet-50 grid) with :mod:`.grace_costs` (GRACE's compressors' operations,
counted from its code), :mod:`.cost_table` (an implementation's measured costs) and
:mod:`.data_path` (collectives staged through host memory);
:mod:`.fabric` (switch fabrics as graphs: fat-tree with oversubscription, BCube, 2-D torus; ECMP
routes) and :mod:`.flows` (flow-level simulation: max-min fair sharing of links, re-solved at
every flow's start and end), :mod:`.gpu_fabric` (GPU clusters: NVSwitch or PCIe nodes, rails or
one NIC per node), :mod:`.fabric_sync` (flat ring, leader, rail-aware all-reduce, PS and BML on a
fabric, flow by flow), :mod:`.on_fabric` (an iteration on a fabric: ``sim.iteration(profile,
sim.fat_tree(4, oversubscription=2))``, or ``sim.OnFabric(fabric, "rail", gpus_per_node=8)`` for
the rail-aware all-reduce, each message timed by the flow-level model). Links and transports are
named in :mod:`commlab.net` (one table); in-network aggregation, protocol and closed form, is
:mod:`commlab.arch.switch` and :mod:`commlab.arch.innetwork`.
"""
from __future__ import annotations

from ..schedule.profile import Profile
from .cluster import Cluster
from .closed_forms import comm_time
from .devices import BUILTINS, DEVICES, PROFILES, Device, builtin, get_device, profile
from .fabric import Fabric, bcube, fat_tree, torus_2d
from .gpu_fabric import FABRICS, build, gpu_cluster
from .frameworks import FRAMEWORKS, Framework, framework
from .on_fabric import OnFabric
from .iteration import LEVELS, METHODS, Iteration, iteration
from .measured import measure
from .to_device import MEMORY_GB, RATES, describe, to_device
from .profile_file import load_profile, resolve, save_profile
from . import survey  # noqa: E402  (after iteration, which it reads)

__all__ = ["Profile", "profile", "measure", "to_device", "describe", "RATES", "MEMORY_GB", "save_profile", "load_profile", "resolve", "builtin", "PROFILES", "BUILTINS", "Device", "DEVICES", "get_device", "Cluster",
           "FABRICS", "build", "gpu_cluster", "Fabric", "bcube", "fat_tree", "torus_2d", "OnFabric", "comm_time", "iteration", "Iteration",
           "METHODS", "LEVELS", "FRAMEWORKS", "Framework", "framework", "survey"]
