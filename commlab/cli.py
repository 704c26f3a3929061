"""The command line: ``python -m commlab train | simulate | advise | rules | classroom``.

* ``train``: one Trainer run (every dimension a flag), a progress bar, the History as CSV (or
  Parquet, with pyarrow installed), and a PNG of the loss against simulated time (against the
  step without a network model)::

      python -m commlab train --model mlp --data digits --workers 8 --sync "ssp(staleness=2)" \\
          --arch ps --compress "topk(0.01)+ef" --net 10GbE --steps 300 --out run.csv

  ``--compress-per tensor`` sends each parameter tensor as its own compressed message instead of
  the fused buffer (the Trainer's ``compress_per``).

* ``simulate``: one data-parallel iteration of a built-in profile on a cluster of
  :mod:`commlab.sim`, its timeline summary, and the speedup table from 1 GPU up::

      python -m commlab simulate --model resnet50 --gpus 32 --net 100GbIB --method mg_wfbp

* ``advise``: the configurations of :func:`commlab.advisor.advise` ranked by predicted time to a
  target, with their reasoning::

      python -m commlab advise --model resnet50 --gpus 32 --net 10GbE --target 5000

* ``rules``: the tables of allowed combinations (:func:`commlab.rules.markdown`), drawn from what
  each synchronizer, architecture and compressor declares.

* ``classroom student | grade``: the student edition of the chapters, and a gradebook of the
  notebooks students hand in (:mod:`commlab.classroom.command`).

``--help`` lists every name each dimension offers. A bad flag or name ends with a message that
names the valid choices and exit status 2, before anything runs.
"""
from __future__ import annotations

import argparse
import os
import sys

from . import arch as arch_pkg
from . import checks
from . import compress as compress_pkg
from . import data as data_pkg
from . import models as models_pkg
from . import rules
from . import schedule as schedule_pkg
from . import sim
from . import sync as sync_pkg
from .net.link import PROFILES
from .history import Diverged
from .runtime import RUNTIMES, RankError
from .spec import COMPRESS_PER
from .classroom import command as classroom
from . import own_model
from .cli_cluster import advise_command, check_name, simulate_command
from .parallel.configs import MODELS as LARGE


def _names() -> dict:
    return {"sync": sync_pkg.SYNCS.names(), "arch": arch_pkg.ARCHITECTURES.names(),
            "compress": compress_pkg.COMPRESSORS.names() + ["<compressor>+ef", "<sparsifier>+<quantizer>"],
            "schedule": schedule_pkg.SCHEDULES.names(), "model": list(models_pkg.MODELS),
            "data": list(data_pkg.LOADERS), "net": list(PROFILES), "cluster link": list(PROFILES),
            "runtime": list(RUNTIMES), "method": list(sim.METHODS), "profile": list(sim.BUILTINS),
            "advised model": [*sim.BUILTINS, *LARGE]}


def _epilog(keys) -> str:
    names = _names()
    return "names each dimension offers:\n" + "\n".join(f"  {k}: {', '.join(names[k])}" for k in keys)


def parser() -> argparse.ArgumentParser:
    """The argparse parser: subcommands train, simulate and advise, each epilog listing valid names."""
    top = argparse.ArgumentParser(prog="python -m commlab", description="commlab from the command line")
    sub = top.add_subparsers(dest="command", required=True, metavar="{train,simulate,advise,profile,rules,classroom}")
    fmt = argparse.RawDescriptionHelpFormatter

    t = sub.add_parser("train", help="train with the Trainer and save the History", formatter_class=fmt,
                       epilog=_epilog(("model", "data", "sync", "arch", "compress", "schedule", "net", "runtime")))
    t.add_argument("--model", default="mlp", help="a model name, or pkg.module:builder (your own)")
    t.add_argument("--data", default="digits", help="a data set name, or pkg.module:loader (your own)")
    t.add_argument("--workers", type=int, default=4)
    t.add_argument("--sync", default="bsp", help='e.g. bsp, "ssp(staleness=2)", "local_sgd(period=4)", dpsgd')
    t.add_argument("--arch", default="native", help='e.g. ring, "ps(shards=2)", "gossip(topology=\'ring\')"')
    t.add_argument("--compress", default=None, help='e.g. "topk(0.01)+ef", "qsgd(levels=16)"')
    t.add_argument("--compress-per", default="bucket", choices=COMPRESS_PER,
                   help="compressed messages: the fused buffer (bucket) or one per parameter tensor")
    t.add_argument("--schedule", default=None, help='e.g. wfbp, "fusion(mb=25)", mg_wfbp')
    t.add_argument("--net", default=None, help="a link for the simulated clock, e.g. 10GbE")
    t.add_argument("--profile", default=None,
                   help="a profile file (python -m commlab profile): the simulated clock charges a step the profile's "
                        "measured compute (scaled to --batch-size); needs --net")
    t.add_argument("--device", default=None, choices=list(sim.RATES),
                   help="with --profile: the profile mapped to this device first (commlab.sim.to_device)")
    t.add_argument("--runtime", default="threads", choices=RUNTIMES)
    t.add_argument("--steps", type=int, default=100)
    t.add_argument("--batch-size", type=int, default=32)
    t.add_argument("--lr", type=float, default=0.1)
    t.add_argument("--momentum", type=float, default=0.0)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--eval-every", type=int, default=10)
    t.add_argument("--out", default="run.csv", help="the History: .csv or .parquet")
    t.add_argument("--plot", default=None, help="PNG of the loss (default: --out with .png)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")

    s = sub.add_parser("simulate", help="simulate one iteration on a cluster", formatter_class=fmt,
                       epilog=_epilog(("profile", "method", "cluster link")))
    s.add_argument("--model", default=None, help="a built-in profile (default resnet50)")
    s.add_argument("--gpus", type=int, default=32)
    s.add_argument("--gpus-per-node", type=int, default=4)
    s.add_argument("--net", default="100GbIB", help="the link between nodes (a cluster link)")
    s.add_argument("--intra", default="PCIe3-mgwfbp", help="the link inside a node (a cluster link)")
    s.add_argument("--method", default="mg_wfbp", choices=list(sim.METHODS))

    v = sub.add_parser("advise", help="rank configurations by predicted time to a target", formatter_class=fmt,
                       epilog=_epilog(("advised model", "cluster link")))
    v.add_argument("--model", default=None, help="a built-in profile or a large model (default resnet50)")
    v.add_argument("--gpus", type=int, default=32)
    v.add_argument("--gpus-per-node", type=int, default=4)
    v.add_argument("--net", default="100GbIB", help="the link between nodes (a cluster link)")
    v.add_argument("--intra", default="PCIe3-mgwfbp", help="the link inside a node (a cluster link)")
    v.add_argument("--target", type=int, default=1000, help="rounds BSP needs to reach the target")
    v.add_argument("--budget", type=float, default=None, help="seconds; keep what fits in it")
    v.add_argument("--batch", type=int, default=None, help="sequences per step (large models)")
    v.add_argument("--top", type=int, default=10, help="rows to print")

    sub.add_parser("rules", help="which combinations of sync, arch, compress and schedule run",
                   description="The tables of allowed combinations, drawn from what each component declares "
                               "(commlab.rules; docs/architecture.md shows them).")
    for parser_ in (s, v):
        parser_.add_argument("--profile", default=None, help="a profile file (python -m commlab profile) "
                                                              "instead of --model")
        parser_.add_argument("--device", default=None, choices=list(sim.RATES),
                             help="with --profile: the GPU each worker is, the profile's operators mapped to it by "
                                  "a roofline (commlab.sim.to_device); without it, the device it was measured on")
    own_model.add_parser(sub, fmt)
    classroom.add(sub, fmt)
    return top


def _profiled_network(p, a, model, data):
    """The --net link with a compute rate that makes one step of the model take the profile's
    measured compute (mapped to --device if given), scaled from the profile's batch to --batch-size."""
    from .models.intensity import flops_per_sample
    from .net import Network

    if a.profile is None:
        p.error("--device maps a profile (--profile) to another device; give --profile too")
    if a.net is None:
        p.error("--profile sets the simulated clock's compute: give --net too (the link between workers)")
    try:
        profile = sim.load_profile(a.profile)
        if a.device is not None:
            profile = sim.to_device(profile, a.device)
        dataset = data if isinstance(data, data_pkg.Dataset) else data_pkg.load(data, seed=a.seed)
        built = model(dataset) if callable(model) else models_pkg.build_model(model, dataset)
        per_sample = flops_per_sample(built, dataset.x_train[:1])
        step = sum(profile.forward_s) + sum(profile.backward_s)
        if step <= 0:
            raise ValueError(f"{a.profile}: the profile's step takes no time")
        rate = per_sample * profile.batch / step
        network = Network(a.net, flops=rate)
    except (ValueError, FileNotFoundError, KeyError) as e:
        p.error(f"--profile: {e}")
    print(f"the simulated clock charges a step {step * a.batch_size / profile.batch * 1e3:.4g} ms of compute: "
          f"{sim.describe(profile)}, {step * 1e3:.4g} ms at batch {profile.batch}, scaled to --batch-size "
          f"{a.batch_size}")
    return network


def _train(p, a) -> int:
    from .train import Trainer

    model, data = a.model, a.data
    try:  # your own model and data, named pkg.module:name
        model = own_model.builder(a.model) if ":" in a.model else model
        data = own_model.loader(a.data, a.seed) if ":" in a.data else data
    except ValueError as e:
        p.error(str(e))
    if model is a.model:
        check_name(p, "--model", a.model, list(models_pkg.MODELS))
    if data is a.data:
        check_name(p, "--data", a.data, list(data_pkg.LOADERS))
    if model is not a.model and not isinstance(data, str):  # your own builder: built once here, its errors said
        try:
            model(data)
        except ValueError as e:
            p.error(str(e))
    out, ext = a.out, os.path.splitext(a.out)[1].lower()
    png = a.plot or os.path.splitext(out)[0] + ".png"
    try:  # every output can be written, before any work starts
        checks.output_path("--out", out, (".csv", ".parquet"))
        checks.output_path("--plot", png, (".png",))
    except (ValueError, TypeError) as e:
        p.error(str(e))
    if os.path.abspath(png) == os.path.abspath(out):
        p.error(f"--plot {png!r} is --out's file too")
    if ext == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            p.error("--out *.parquet needs pyarrow (pip install pyarrow); or write .csv")
    if a.steps < 1:
        p.error(f"--steps {a.steps} must be >= 1")
    net = a.net
    if a.profile is not None or a.device is not None:
        net = _profiled_network(p, a, model, data)
    try:
        trainer = Trainer(model, data, workers=a.workers, sync=a.sync, arch=a.arch, compress=a.compress,
                          compress_per=a.compress_per, schedule=a.schedule, net=net, runtime=a.runtime,
                          seed=a.seed, batch_size=a.batch_size, lr=a.lr, momentum=a.momentum,
                          eval_every=a.eval_every, progress=not a.no_progress)
    except (ValueError, TypeError) as e:
        p.error(str(e))
    try:
        history = trainer.fit(a.steps)
    except Diverged as e:  # the Trainer stops a run whose loss or model blows up: said, nothing written
        print(f"python -m commlab train: {e} (now --lr {a.lr:g})", file=sys.stderr)
        return 1
    except RankError as e:  # a failed rank: said, and nothing written
        print(f"python -m commlab train: {e}".splitlines()[0], file=sys.stderr)
        return 1
    frame = history.to_dataframe()
    tmp, tmp_png = out + ".partial", png + ".partial.png"  # both written aside, then both renamed
    try:
        frame.to_csv(tmp) if ext == ".csv" else frame.to_parquet(tmp)
        _plot(frame, tmp_png, f"{a.model} on {a.data}, {a.workers} workers, {a.sync}, {a.arch}"
                              + (f", {a.compress}" if a.compress else "") + (f", {a.net}" if a.net else ""))
        os.replace(tmp, out)
        os.replace(tmp_png, png)
    except OSError as e:  # e.g. the disk filled up: all outputs or none
        for path in (tmp, tmp_png):
            if os.path.exists(path):
                os.remove(path)
        print(f"python -m commlab train: could not write the outputs ({e}); nothing written", file=sys.stderr)
        return 1
    last = frame.iloc[-1]
    print(f"{len(frame)} steps: final loss {last['loss']:.4f}, test accuracy {history.final_accuracy:.4f}"
          + (f", {last['sim_time']:.4g} simulated s" if frame["sim_time"].notna().any() else ""))
    print(f"wrote {out} and {png}")
    return 0


def _plot(frame, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2))
    timed = frame["sim_time"].notna().all()
    x = frame["sim_time"] if timed else frame.index
    ax.plot(x, frame["loss"])
    ax.set_xlabel("simulated seconds" if timed else "step")
    ax.set_ylabel("training loss")
    ax.set_title(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)


def main(argv=None) -> int:
    """Parse ``argv`` (sys.argv when None), run the chosen subcommand and return its exit code."""
    p = parser()
    a = p.parse_args(argv)
    sub = p._subparsers._group_actions[0].choices[a.command]
    return {"train": _train, "simulate": simulate_command, "advise": advise_command, "rules": _rules,
            "profile": own_model.run, "classroom": classroom.run}[a.command](sub, a)


def _rules(p, a) -> int:
    print(rules.markdown(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
