"""One data-parallel iteration on a cluster: a schedule's policy, its messages, their times.

``iteration(profile, cluster, arch, schedule)`` runs the same policy objects the real executor
runs (:mod:`commlab.schedule`): the policy plans with ``comm_time(nbytes)``, the collective's
closed form on the cluster (:mod:`commlab.sim.closed_forms`); :func:`commlab.schedule.dispatch.dispatch`
lists the messages of one worker's communication stream; the iteration is in steady state
(:func:`commlab.schedule.dispatch.iteration`): from the start of backward to the end of the next
forward, which starts at once, layer by layer as parameters arrive, for a plan with
``forward_waits`` (ByteScheduler, P3), or after the last message otherwise.

Two levels of detail:

* ``level="closed"``: each message lasts its closed form. On a flat cluster (one GPU per node)
  with WFBP this is the recurrence of Shi, Chu, Li (MG-WFBP, 2019):
  tau_c(L) = tau_b(L) + t_b(L), tau_c(l) = max(tau_c(l+1) + t_c(l+1), tau_b(l) + t_b(l)),
  t_iter = sum t_f + tau_c(1) + t_c(1). Its cost does not grow with the number of GPUs.
* ``level="message"``: the same messages, each expanded into every point-to-point message of
  its collective on every GPU, NIC and server (:mod:`commlab.sim.programs`) and timed by the
  event loop (:mod:`commlab.sim.events`), with each rank running its collectives one after
  another. The messages' composition is the dispatcher's (under the closed form); their times
  are the loop's. It equals the closed form on a flat ring and shows queues the closed form
  averages away (a busy server, a NIC shared by a ring's hops).

``method=`` names the seven configurations of the quantitative survey (Shi et al., IEEE Network
2021) as it ran them: BSP (no overlap: every gradient in one message after backward), WFBP (one
message per layer as it is ready), MG-WFBP, ByteScheduler (4 MB partitions by priority under a
16 MB credit), each on all-to-all (a2a: all-reduce through Horovod) or BytePS (ps: its pipelined
parameter server, ``arch="byteps"``, one server machine per worker node), each with its
framework's cost per operation (:mod:`commlab.sim.frameworks`).

``framework=`` adds a framework's cost to every message, and with ``"horovod-mpi"`` or
``"horovod-cpu"`` stages every collective through host memory (:mod:`commlab.sim.data_path`; closed
level only: the message level times the bytes of every point-to-point message and nothing else).

``compress=`` (a spec of :mod:`commlab.compress`, any registered compressor or chain) sends each
message as the compressor's collectives and charges its encoding and decoding on the profile's
device (``device=`` overrides it), tensor by tensor or bucket by bucket as the framework does:
:mod:`commlab.sim.compression` (closed level, ``arch="allreduce"`` on a Cluster).

**On a fabric.** ``cluster`` may instead be a :class:`~commlab.sim.fabric.Fabric` (``sim.fat_tree``
with its oversubscription, ``sim.gpu_cluster``, ...: every host a worker, the flat ring) or an
:class:`~commlab.sim.on_fabric.OnFabric` (the rail-aware or leader all-reduce): then
``comm_time(nbytes)`` is the collective's time in the flow-level model on that fabric
(:mod:`commlab.sim.on_fabric`), and the same policy and dispatcher compose the iteration, with
framework costs as on a Cluster. Only ``level="closed"`` and ``arch`` "allreduce" or "ps" (sharded
over the workers) run there: the message level's programs and BytePS's pipeline are a Cluster's.
"""
from __future__ import annotations

import dataclasses
import time as _time
from dataclasses import dataclass

from .. import compress as _compress
from .. import schedule as _schedule
from ..schedule.dispatch import arrivals, dispatch, iteration as _steady, next_forward
from ..schedule.policies import baseline
from ..schedule.profile import Profile
from ..arch.algorithms import names
from . import closed_forms, compression, programs
from .cost_table import CostTable
from .cluster import Cluster
from .devices import get_device
from .fabric import Fabric
from .frameworks import framework
from .on_fabric import OnFabric
from .profile_file import resolve

METHODS = {  # method: (arch, schedule, framework)
    "bsp_ps": ("byteps", None, "byteps"), "bsp_a2a": ("allreduce", None, "horovod"),
    "wfbp_ps": ("byteps", "wfbp", "byteps"), "wfbp_a2a": ("allreduce", "wfbp", "horovod"),
    "mg_wfbp": ("allreduce", "mg_wfbp", "horovod"),
    "bytescheduler_ps": ("byteps", "bytescheduler", "byteps"),
    "bytescheduler_a2a": ("allreduce", "bytescheduler", "bytescheduler"),
}
LEVELS = ("closed", "message")


@dataclass(frozen=True)
class Iteration:
    """The result of :func:`iteration`: ``time`` (s per iteration, steady state), the plan and
    its messages (seconds from the start of backward), and counts of what was simulated."""

    time: float
    profile: Profile
    cluster: Cluster | OnFabric
    arch: str
    plan: object
    messages: tuple
    level: str
    events: int  # closed: messages timed; message: events the loop handled
    p2p: int  # point-to-point messages simulated (message level), else 0
    wall: float  # seconds the simulation took
    compression: compression.Compression | None = None  # what a compressor added (None: uncompressed)

    @property
    def workers(self) -> int:
        """Data-parallel workers: every GPU of the cluster (every host of a fabric)."""
        return self.cluster.gpus

    @property
    def throughput(self) -> float:
        """Samples per second over all workers."""
        return self.workers * self.profile.batch / self.time

    @property
    def single(self) -> float:
        """Seconds of one step on one GPU: forward + backward, nothing to communicate."""
        return sum(self.profile.forward_s) + sum(self.profile.backward_s)

    @property
    def speedup(self) -> float:
        """Throughput over one GPU's."""
        return self.workers * self.single / self.time

    @property
    def timeline(self):
        """One steady-state period as a DataFrame, seconds from the start of backward: the
        backward of every layer, every message, then the next forward of every layer.
        Columns: stream (compute, comm), kind, name, layers, bytes, ready, start, end."""
        import pandas as pd

        prof, rows = self.profile, []
        ready = prof.ready()
        for l in reversed(range(prof.layers)):
            rows.append(("compute", "backward", prof.names[l], (l,), 0, ready[l] - prof.backward_s[l],
                         ready[l] - prof.backward_s[l], ready[l]))
        kind = "push-pull" if self.arch in ("ps", "byteps") else "allreduce"
        for m in self.messages:
            rows.append(("comm", kind, f"{len(m.layers)} layer(s)", m.layers, m.nbytes, m.ready, m.start, m.end))
        arrive = arrivals(self.messages, prof.layers)
        t = sum(prof.backward_s) if self.plan.forward_waits else max([sum(prof.backward_s), *arrive])
        for l in range(prof.layers):
            start = max(t, arrive[l]) if self.plan.forward_waits else t
            t = start + prof.forward_s[l]
            rows.append(("compute", "forward", prof.names[l], (l,), 0, start, start, t))
        return pd.DataFrame(rows, columns=["stream", "kind", "name", "layers", "bytes", "ready", "start", "end"])

    def __repr__(self) -> str:
        comp = "" if self.compression is None else f" {self.compression.compressor!r} per {self.compression.compress_per}"
        return (f"Iteration({self.plan.name} {self.arch}{comp} on {self.cluster}: {self.time * 1e3:.4g} ms, "
                f"{self.throughput:.5g} samples/s, speedup {self.speedup:.3g}, {len(self.messages)} messages)")


def _choose(method, arch, schedule, fw):
    if method is None:
        fw = framework(fw or "ideal")
        return arch or "allreduce", fw.schedule if schedule is None else schedule, fw
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    if arch is not None or schedule is not None:
        raise ValueError(f"method={method!r} sets arch and schedule; give method= alone, or arch= and schedule=")
    arch, spec, default = METHODS[method]
    return arch, spec, framework(fw or default)


def iteration(profile, cluster: Cluster | Fabric | OnFabric, arch: str | None = None, schedule=None,
              servers: int | None = None, method: str | None = None, level: str = "closed",
              framework=None, compress=None, device=None, compress_costs=None) -> Iteration:
    """Simulate one steady-state iteration.

    profile: a :class:`Profile` or a built-in name ("resnet50", "bert-base", "bert-large");
    cluster: a :class:`Cluster`, or a Fabric or an OnFabric (see the module doc); arch: "allreduce"
    (default), "ps", "byteps" or "switchml" (on a fabric: "allreduce" or "ps"); schedule: a spec ("wfbp",
    "mg_wfbp", "fusion(mb=25)", "bytescheduler", "p3", "cycle"), a Schedule, "none" (one message after
    backward), or None (the framework's, :mod:`commlab.sim.frameworks`, else "none"); servers: server
    machines for "ps" (default: one per worker node); method: one of
    :data:`METHODS` instead of arch and schedule; level: "closed" or "message"; framework: a name
    of :data:`commlab.sim.frameworks.FRAMEWORKS` (default: the method's, else "ideal"); compress: a
    compressor spec ("fp16", "topk(0.01)+ef", "powersgd(rank=4)", ...) or None; device: the device
    that times the compression arithmetic and whose PCIe link a staged framework crosses (default:
    the profile's, :func:`commlab.sim.profile`);
    compress_costs: a measured cost table (:class:`commlab.sim.cost_table.CostTable`, its dict or
    JSON file) that times it instead of the compressor's declaration."""
    began = _time.perf_counter()
    profile = resolve(profile)
    if isinstance(cluster, Fabric):
        cluster = OnFabric(cluster)
    if not isinstance(cluster, (Cluster, OnFabric)):
        raise ValueError(f"cluster must be a sim.Cluster(nodes, gpus_per_node, ...), a Fabric (sim.fat_tree, "
                         f"sim.gpu_cluster, ...) or a sim.OnFabric(fabric, allreduce, gpus_per_node), got {cluster!r}")
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; valid: {', '.join(LEVELS)}")
    on_fabric = isinstance(cluster, OnFabric)
    if on_fabric and level != "closed":
        raise ValueError(f"level={level!r} replays a sim.Cluster's point-to-point programs; on a fabric each "
                         "message is timed flow by flow: use level='closed'")
    arch, spec, fw = _choose(method, arch, schedule, framework)
    compressor = _compress.get(compress)
    if compress_costs is not None and compressor is None:
        raise ValueError("compress_costs= times a compressor's arithmetic: give compress= too")
    if compressor is not None:
        return _compressed(began, profile, cluster, arch, spec, fw, level, compressor, device, compress_costs)
    bytes_time = cluster.comm_time(arch, servers) if on_fabric else closed_forms.comm_time(cluster, arch, servers)
    if fw.staged and arch != "allreduce":
        raise ValueError(f"framework={fw.name!r} stages all-reduces through host memory: use arch='allreduce' "
                         f"(got arch={arch!r})")
    free = (fw.per_op == 0 and not fw.staged) or cluster.gpus == 1  # one GPU runs no collective
    dev = profile.device if device is None else get_device(device)
    comm_time = bytes_time if free else (lambda n: fw.collective("allreduce", n, bytes_time(n), cluster.gpus, dev))
    policy = _schedule.get(spec)
    plan = baseline(profile) if policy is None else policy.plan(profile, comm_time)
    if level == "closed":
        t, messages = _steady(plan, profile, comm_time)
        return Iteration(t, profile, cluster, arch, plan, tuple(messages), level, len(messages), 0,
                         _time.perf_counter() - began)
    if cluster.allreduce == "nccl" and arch == "allreduce":
        raise ValueError("level='message' replays the programs of registered all-reduces, not NCCL's choice; use "
                         f"Cluster(allreduce=...) with one of {', '.join(names('program'))}, or level='closed'")
    if fw.per_op or fw.staged or arch not in ("allreduce", "ps"):
        raise ValueError(f"level='message' times bytes only: it has no framework costs, no pipelined BytePS and "
                         f"no switch (got framework={fw.name!r}, arch={arch!r}); use level='closed', or "
                         "arch='allreduce'/'ps' with framework='ideal'")
    listed = dispatch(plan, profile, comm_time)
    servers = closed_forms.servers_for(cluster, servers) if arch == "ps" else 0
    times, p2p, events = programs.simulate(cluster, [m.nbytes for m in listed], [m.ready for m in listed],
                                           arch, servers)
    messages = tuple(dataclasses.replace(m, start=s, end=e) for m, (s, e) in zip(listed, times))
    t = next_forward(profile.forward_s, sum(profile.backward_s), arrivals(messages, profile.layers), plan.forward_waits)
    return Iteration(t, profile, cluster, arch, plan, messages, level, events, p2p, _time.perf_counter() - began)


def _compressed(began, profile, cluster, arch, spec, fw, level, compressor, device, costs) -> Iteration:
    """:func:`iteration` with a compressor (:mod:`commlab.sim.compression`)."""
    if isinstance(cluster, OnFabric) or arch != "allreduce" or level != "closed":
        raise ValueError(f"compress={compressor!r} is simulated over arch='allreduce' on a sim.Cluster at "
                         f"level='closed' (got arch={arch!r}, level={level!r}, cluster {cluster}); valid: "
                         "arch='allreduce', level='closed', a Cluster")
    dev = profile.device if device is None else get_device(device)
    if dev is None and costs is None:
        raise ValueError("compress= needs the device that runs the compressor: give device= (a name of "
                         "sim.DEVICES or a sim.Device), or a profile made by sim.profile(..., device=...)")
    if costs is not None:
        table = CostTable.load(costs)
        table.entry(compressor.name)  # a compressor the table lacks is refused before anything runs
        timer = table.timer(dev)
    else:
        timer = compression.declared(dev)
    policy = _schedule.get(spec)
    per = "tensor" if compressor.whole_tensors else fw.compress_per
    if cluster.gpus == 1:  # one GPU communicates nothing and compresses nothing
        plan = baseline(profile) if policy is None else policy.plan(profile, lambda n: 0.0)
        t, messages = _steady(plan, profile, lambda n: 0.0)
        return Iteration(t, profile, cluster, arch, plan, tuple(messages), level, len(messages), 0,
                         _time.perf_counter() - began)
    if per == "tensor":
        comp = compression.by_tensor(profile, compressor, timer, cluster, fw, dev)
        plan = baseline(profile) if policy is None else policy.plan(profile, comp.comm_time)
    else:
        planned = compression.planning_time(compressor, timer, cluster, fw, profile.itemsize, dev)
        plan = baseline(profile) if policy is None else policy.plan(profile, planned)
        comp = compression.by_bucket(profile, plan, compressor, timer, cluster, fw, dev)
    t, messages = _steady(plan, comp.profile, comp.comm_time)
    return Iteration(t, profile, cluster, arch, plan, tuple(messages), level, len(messages), 0,
                     _time.perf_counter() - began, comp)
