"""The rulebook: which combinations of synchronizer, architecture, compressor and schedule run.

Every component declares what it is and what it needs, and this module alone decides from those
declarations, before any rank starts (``Trainer.__init__`` calls :func:`check`). No rule here, and
none elsewhere, asks for a component by its name.

* a synchronizer (:class:`commlab.sync.base.Synchronizer`): ``needs`` (services of the exchange:
  ``step``, ``average``, ``server``, ``neighbours``), ``takes_arch``, ``compresses``, ``decodes``
  and ``compresses_per`` (a rule that talks over comm itself), ``schedulable``, ``takes_momentum``,
  ``runtimes``, ``server_policy()``;
* an architecture (:class:`commlab.arch.base.Architecture`): ``provides``, ``decodes``
  (``together``, ``each``, ``none``), ``replies``, ``schedulable``, ``schedules_compressed``,
  ``needs_policy``, ``compresses_per``;
* a compressor (:class:`commlab.compress.base.Compressor`, read through any wrapper as ``.base``):
  ``protocol``, ``aggregation``, ``keeps_round_state``, ``applies_momentum``, ``whole_tensors``,
  ``remembers_error``;
* a server policy: ``synchronous``.

Where compressed payloads are decoded decides which compressors fit: all ranks ``together`` run
anything, a compressor's own all-reduce protocol too; a receiver that decodes ``each`` payload
alone (a server, a neighbour) cannot run such a protocol, and a compressor whose aggregation keeps
state across rounds needs a synchronous server policy; a ``weighted`` receiver (FedAvg's server)
also loses a majority vote's size and skips aggregation state; ``none`` carries no compression.
A ``compress_per`` other than the default (``"tensor"``) needs a compressor and an exchange (or a
rule that talks over comm itself) that declares it in ``compresses_per``.

Each error names the conflict and the valid choices, which are read from the registries and
the same declarations. :func:`markdown` draws the tables of allowed combinations that
docs/architecture.md shows (``python -m commlab rules`` prints them; a test keeps that page equal).
"""
from __future__ import annotations

from dataclasses import fields
from functools import partial

from . import arch as arch_pkg
from . import compress as compress_pkg
from . import decentral  # noqa: F401  (registers the decentralized rules and arch="gossip")
from . import parallel  # noqa: F401  (registers arch="zero(...)")
from . import schedule as schedule_pkg
from . import sync as sync_pkg
from .arch.aggregate import PROTOCOLS
from .config import Config

_DEFAULT_PER = next(f.default for f in fields(Config) if f.name == "compress_per")
NEEDS = {"step": "averages each step's gradients", "average": "averages models",
         "server": "runs over a parameter server", "neighbours": "averages with neighbours only"}


def _arch_class(name: str):
    """The class an architecture name builds (an all-reduce's builder is a partial of AllReduce)."""
    builder = arch_pkg.ARCHITECTURES.builders[name]
    return builder.func if isinstance(builder, partial) else builder


def _names(registry, fits) -> str:
    return ", ".join(n for n in registry.names() if fits(n)) or "none"


def _syncs(fits) -> str:
    return _names(sync_pkg.SYNCS, lambda n: fits(sync_pkg.get(n)))


def _compressors(fits) -> str:
    return _names(compress_pkg.COMPRESSORS, lambda n: fits(compress_pkg.get(n)))


def _decoding_conflict(decoder: str, c, policy=None) -> str | None:
    """Why compressor ``c`` cannot be decoded by a ``decoder`` receiver, or None."""
    c = c.base
    if c.protocol is not None and c.protocol not in PROTOCOLS:
        return (f"names the aggregation protocol {c.protocol!r}, which no one registered; valid protocols: "
                f"{', '.join(PROTOCOLS)} (commlab.arch.aggregate.register_protocol)")
    if decoder == "none":
        return "carries no compression (use None)"
    if decoder in ("each", "weighted") and c.protocol is not None:
        return (f"aggregates by its own all-reduce protocol ({c.protocol}), which a receiver that decodes "
                "each payload alone cannot run")
    if decoder == "weighted" and c.aggregation == "majority":
        return "decodes to signs for a majority vote, which loses the update's size"
    if decoder == "weighted" and c.keeps_round_state:
        return "keeps state in its aggregation (the receiver's combine), which a weighted average skips"
    if decoder == "each" and c.keeps_round_state and policy is not None and not policy.synchronous:
        return "keeps per-round state in its aggregation, which needs every worker's round together (sync='bsp')"
    return None


class Combination:
    """One Trainer configuration as built objects: ``config`` (the options), ``sync``, ``arch``,
    ``compressor`` and ``reply`` (None: none), ``schedule`` (None: none)."""

    def __init__(self, config, sync, arch, compressor=None, reply=None, schedule=None):
        self.config, self.sync, self.arch = config, sync, arch
        self.compressor, self.reply, self.schedule = compressor, reply, schedule
        self.policy = sync.server_policy() if arch.needs_policy else None
        self.decoder = arch.decodes if sync.takes_arch else sync.decodes


def _runtime(k: Combination) -> str | None:
    c, runtimes = k.config, k.sync.runtimes
    if runtimes is not None and c.runtime not in runtimes:
        return f"sync={c.sync!r} runs on runtime={' or '.join(map(repr, runtimes))} only; got runtime={c.runtime!r}"


def _arch(k: Combination) -> str | None:
    c, s, a = k.config, k.sync, k.arch
    if not s.takes_arch:
        if c.arch != "native":
            return (f"sync={c.sync!r} talks over its ranks itself and takes no arch; got arch={c.arch!r}; "
                    "valid: arch='native' (the default)")
        return None
    missing = sorted(s.needs - a.provides, key=list(NEEDS).index)
    if missing:
        valid = _names(arch_pkg.ARCHITECTURES, lambda n: s.needs <= _arch_class(n).provides)
        return (f"sync={c.sync!r} {NEEDS[missing[0]]}, which arch={c.arch!r} does not offer; "
                f"valid: arch={valid}")
    if a.needs_policy:
        if k.policy is None:
            return (f"arch={c.arch!r} runs a synchronizer's server policy; sync={c.sync!r} does not run over a "
                    f"parameter server; valid: sync={_syncs(lambda x: x.server_policy() is not None)}")
        try:
            a.check_policy(k.policy)
        except ValueError as e:
            return str(e)
    return None


def _sends_compressed(k: Combination) -> str | None:
    c, s = k.config, k.sync
    if (k.compressor is not None or k.reply is not None) and not s.compresses:
        valid = _syncs(lambda x: x.compresses and x.needs == s.needs and x.takes_arch == s.takes_arch)
        return (f"sync={c.sync!r} sends its values exactly, with no compression; got compress={c.compress!r}; "
                f"valid with compression: sync={valid}")


def _schedule(k: Combination) -> str | None:
    c, a = k.config, k.arch
    if k.schedule is None:
        return None
    if not k.sync.schedulable:
        return (f"schedule={c.schedule!r} orders the gradient messages of one synchronous step; sync={c.sync!r} "
                f"cannot use it; valid with a schedule: sync={_syncs(lambda x: x.schedulable)}")
    if not a.schedulable:
        return (f"schedule={c.schedule!r}: arch={c.arch!r} does not send a schedule's messages; valid with a "
                f"schedule: arch={_names(arch_pkg.ARCHITECTURES, lambda n: _arch_class(n).schedulable)}")
    if (k.compressor is not None or k.reply is not None) and not a.schedules_compressed:
        return (f"schedule={c.schedule!r} runs over arch={c.arch!r} with no compression; got "
                f"compress={c.compress!r}, reply_compress={c.reply_compress!r} (use an all-reduce arch to "
                "schedule compressed gradients)")


def _compression(k: Combination) -> str | None:
    c = k.config
    for option, comp in (("compress", k.compressor), ("reply_compress", k.reply)):
        if comp is None:
            continue
        why = _decoding_conflict(k.decoder, comp, k.policy)
        if why is not None:
            where = f"arch={c.arch!r}" if k.sync.takes_arch else f"sync={c.sync!r}"
            valid = _compressors(lambda x: _decoding_conflict(k.decoder, x, k.policy) is None)
            return f"{option}={getattr(c, option)!r} over {where}: {why}; valid: {option}={valid}"
    if k.reply is not None and not k.arch.replies:
        return (f"reply_compress={c.reply_compress!r} compresses a parameter server's replies; arch={c.arch!r} "
                f"has none; valid: arch={_names(arch_pkg.ARCHITECTURES, lambda n: _arch_class(n).replies)}")
    if k.reply is not None and k.reply.remembers_error:
        return (f"reply_compress={c.reply_compress!r}: compressed replies carry their error feedback already "
                "(the server keeps what each worker holds); drop the '+ef'")


def _compress_per(k: Combination) -> str | None:
    """``compress_per`` other than the default acts only on compressed messages, and only where
    the exchange (or a rule that talks over comm itself) declares it can cut them so."""
    c, per = k.config, k.config.compress_per
    if per == _DEFAULT_PER:
        return None
    if k.compressor is None and k.reply is None:
        return (f"compress_per={per!r} cuts compressed gradients into messages, but compress=None sends the "
                f"fused buffer uncompressed; valid: compress_per={_DEFAULT_PER!r} (the default), or a compressor")
    if k.sync.takes_arch and per not in k.arch.compresses_per:
        valid = _names(arch_pkg.ARCHITECTURES, lambda n: per in _arch_class(n).compresses_per)
        return (f"compress_per={per!r}: arch={c.arch!r} compresses its fused buffer's pieces (compress_per="
                f"{' or '.join(map(repr, k.arch.compresses_per))}); valid with compress_per={per!r}: arch={valid}")
    if not k.sync.takes_arch and per not in k.sync.compresses_per:
        return (f"compress_per={per!r}: sync={c.sync!r} compresses its own messages per "
                f"{' or '.join(map(repr, k.sync.compresses_per))}; valid: compress_per="
                f"{', '.join(map(repr, k.sync.compresses_per))}")


def _momentum(k: Combination) -> str | None:
    c = k.config
    if not c.momentum:
        return None
    if not k.sync.takes_momentum:
        return f"sync={c.sync!r} applies plain SGD steps; use momentum=0 in the Trainer, got momentum={c.momentum!r}"
    if k.compressor is not None and k.compressor.base.applies_momentum:
        return (f"compress={c.compress!r} applies momentum itself (momentum correction); "
                f"use momentum=0 in the Trainer, got momentum={c.momentum!r}")


RULES = (_runtime, _arch, _sends_compressed, _schedule, _compression, _compress_per, _momentum)


def conflict(k: Combination) -> str | None:
    """The first rule a combination breaks, in words, or None when it runs."""
    for rule in RULES:
        why = rule(k)
        if why is not None:
            return why
    return None


def check(config, sync, arch, compressor=None, reply=None, schedule=None) -> None:
    """ValueError naming the conflict and the valid choices, unless the combination runs; then
    each component's own arguments against the run (``sync.check``, ``arch.check_workers``)."""
    why = conflict(Combination(config, sync, arch, compressor, reply, schedule))
    if why is not None:
        raise ValueError(why)
    sync.check(config)
    arch.check_workers(config.workers)


def check_cuts(config, compressor, cuts: bool) -> None:
    """A compressor of whole tensors (PowerSGD) beside a schedule that cuts a weight (``cuts``): ValueError."""
    if cuts and compressor is not None and compressor.base.whole_tensors:
        raise ValueError(f"compress={config.compress!r} compresses each weight as a matrix, but "
                         f"schedule={config.schedule!r} cuts weights into pieces, which it would send uncompressed; "
                         "use a schedule that keeps layers whole (wfbp, fusion, mg_wfbp) or partitions larger than "
                         "any layer")


# ----------------------------------------------------------------------------- the tables
ARCH_COLUMNS = ("native", "ps", "ps(colocated=True)", "switchml", "zero", "gossip")
RECEIVERS = {"all-reduce (together)": ("together", "bsp"), "ps, bsp (each)": ("each", "bsp"),
             "ps, asp (each)": ("each", "asp"), "gossip (each)": ("each", None), "fedavg (weighted)": ("weighted", None)}


def _runs(sync: str, arch: str, **options) -> bool:
    config = Config(sync=sync, arch=arch, **options)
    k = Combination(config, sync_pkg.get(sync), arch_pkg.get(arch), compress_pkg.get(config.compress),
                    None, schedule_pkg.get(config.schedule))
    return conflict(k) is None


def _cell(sync: str, arch: str) -> str:
    if not _runs(sync, arch):
        return "-"
    extras = [mark for mark, kw in (("C", dict(compress="topk(0.01)")), ("S", dict(schedule="wfbp")))
              if _runs(sync, arch, **kw)]
    return "yes" + (" " + " ".join(extras) if extras else "")


def markdown() -> str:
    """The tables of allowed combinations, drawn from the declarations: synchronizer by
    architecture (C: with a compressor such as top-k; S: with a schedule), and compressor by
    the receiver that decodes its payloads."""
    syncs = sync_pkg.SYNCS.names()
    lines = ["| sync \\ arch | " + " | ".join(f"`{a}`" for a in ARCH_COLUMNS) + " |",
             "|---" * (len(ARCH_COLUMNS) + 1) + "|"]
    lines += [f"| `{s}` | " + " | ".join(_cell(s, a) for a in ARCH_COLUMNS) + " |" for s in syncs]
    policies = {name: sync_pkg.get(name).server_policy() for name in ("bsp", "asp")}
    lines += ["", "| compressor | " + " | ".join(RECEIVERS) + " |", "|---" * (len(RECEIVERS) + 1) + "|"]
    for name in compress_pkg.COMPRESSORS.names():
        c = compress_pkg.get(name)
        cells = ["yes" if _decoding_conflict(decoder, c, policies.get(p)) is None else "-"
                 for decoder, p in RECEIVERS.values()]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
