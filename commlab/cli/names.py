"""The names each dimension offers on the command line (every ``--help`` epilog lists them), and
the refusal of a name that is not one of them."""
from __future__ import annotations

from .. import arch as arch_pkg
from .. import compress as compress_pkg
from .. import data as data_pkg
from .. import models as models_pkg
from .. import schedule as schedule_pkg
from .. import sim
from .. import sync as sync_pkg
from ..net.link import PROFILES
from ..parallel.configs import MODELS as LARGE
from ..runtime import RUNTIMES


def names() -> dict:
    """Each dimension's valid names, from the registries that define them."""
    return {"sync": sync_pkg.SYNCS.names(), "arch": arch_pkg.ARCHITECTURES.names(),
            "compress": compress_pkg.COMPRESSORS.names() + ["<compressor>+ef", "<sparsifier>+<quantizer>"],
            "schedule": schedule_pkg.SCHEDULES.names(), "model": list(models_pkg.MODELS),
            "data": list(data_pkg.LOADERS), "net": list(PROFILES), "cluster link": list(PROFILES),
            "runtime": list(RUNTIMES), "method": list(sim.METHODS), "profile": list(sim.BUILTINS),
            "advised model": [*sim.BUILTINS, *LARGE]}


def epilog(keys) -> str:
    """A subcommand's ``--help`` epilog: the names of the dimensions ``keys``."""
    offered = names()
    return "names each dimension offers:\n" + "\n".join(f"  {k}: {', '.join(offered[k])}" for k in keys)


def check_name(p, flag, value, valid):
    """End with ``p.error`` naming the valid choices unless ``value`` is one of them."""
    if value not in valid:
        p.error(f"{flag} {value!r} is unknown; valid: {', '.join(valid)}")
