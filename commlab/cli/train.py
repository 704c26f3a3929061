"""``python -m commlab train``: one :class:`commlab.Trainer` run, every dimension a flag; the
History as CSV (or Parquet, with pyarrow installed) and a PNG of the loss against simulated time
(against the step without a network model), both written or neither::

    python -m commlab train --model mlp --data digits --workers 8 --sync "ssp(staleness=2)" \\
        --arch ps --compress "topk(0.01)+ef" --net 10GbE --steps 300 --out run.csv

``--compress-per tensor`` sends each parameter tensor as its own compressed message instead of the
fused buffer (the Trainer's ``compress_per``). ``--model`` and ``--data`` take your own builder and
loader as ``pkg.module:name`` (:mod:`commlab.own_model`); ``--profile`` charges a step the compute
a profile file measured (``python -m commlab profile``).
"""
from __future__ import annotations

import os
import sys

from .. import data as data_pkg
from .. import models as models_pkg
from .. import own_model
from .. import sim
from ..files import write_atomic
from ..history import Diverged
from ..runtime import RUNTIMES, RankError
from ..spec import COMPRESS_PER
from .cluster import MEASURED_LINK, link_arg
from .names import check_name, epilog
from .outputs import check_output

NAME = "train"


def add(sub, fmt) -> None:
    """The ``train`` subcommand."""
    t = sub.add_parser(NAME, help="train with the Trainer and save the History", formatter_class=fmt,
                       epilog=epilog(("model", "data", "sync", "arch", "compress", "schedule", "net", "runtime")))
    t.add_argument("--model", default="mlp", help="a model name, or pkg.module:builder (your own)")
    t.add_argument("--data", default="digits", help="a data set name, or pkg.module:loader (your own)")
    t.add_argument("--workers", type=int, default=4)
    t.add_argument("--sync", default="bsp", help='e.g. bsp, "ssp(staleness=2)", "local_sgd(period=4)", dpsgd')
    t.add_argument("--arch", default="native", help='e.g. ring, "ps(shards=2)", "gossip(topology=\'ring\')"')
    t.add_argument("--compress", default=None, help='e.g. "topk(0.01)+ef", "qsgd(levels=16)"')
    t.add_argument("--compress-per", default="bucket", choices=COMPRESS_PER,
                   help="compressed messages: the fused buffer (bucket) or one per parameter tensor")
    t.add_argument("--schedule", default=None, help='e.g. wfbp, "fusion(mb=25)", mg_wfbp')
    t.add_argument("--net", default=None, help=f"a link for the simulated clock, e.g. 10GbE or {MEASURED_LINK}")
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


def _profiled_network(p, a, model, data):
    """The --net link with a compute rate that makes one step of the model take the profile's
    measured compute (mapped to --device if given), scaled from the profile's batch to --batch-size."""
    from ..models.intensity import flops_per_sample
    from ..net import Network

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
        network = Network(link_arg(p, "--net", a.net), flops=rate)
    except (ValueError, FileNotFoundError, KeyError) as e:
        p.error(f"--profile: {e}")
    print(f"the simulated clock charges a step {step * a.batch_size / profile.batch * 1e3:.4g} ms of compute: "
          f"{sim.describe(profile)}, {step * 1e3:.4g} ms at batch {profile.batch}, scaled to --batch-size "
          f"{a.batch_size}")
    return network


def _model_and_data(p, a):
    """--model and --data: registry names checked, or your own builder and loader read (and the
    builder built once here, so that its errors are said before any work starts)."""
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
    if model is not a.model:  # your builder, built once on the data set and run on one of its samples
        try:
            dataset = data if isinstance(data, data_pkg.Dataset) else data_pkg.load(data, seed=a.seed)
            built = model(dataset)
        except ValueError as e:
            p.error(str(e))
        _runs_on(p, a, built, dataset)
    return model, data


def _runs_on(p, a, built, dataset):
    """``p.error`` naming the shapes unless the built model takes one sample of the data set
    (a CNN given token ids, say), before the Trainer runs it inside its own machinery."""
    import torch

    sample = dataset.x_train[:1]
    training = built.training
    try:
        with torch.no_grad():
            built.eval()(sample)
    except Exception as e:  # noqa: BLE001 - the model's own error on the data, named with the shapes
        why = (str(e).strip().splitlines() or [""])[0]
        p.error(f"--model {a.model!r} does not run on --data {a.data!r}: a batch of shape {tuple(sample.shape)} "
                f"({sample.dtype}) raised {type(e).__name__}: {why}")
    finally:
        built.train(training)


def _outputs(p, a):
    """--out and --plot, each checked writable (and not the same file), before any work starts."""
    out = a.out
    png = a.plot or os.path.splitext(out)[0] + ".png"
    check_output(p, "--out", out, (".csv", ".parquet"))
    check_output(p, "--plot", png, (".png",))
    if os.path.abspath(png) == os.path.abspath(out):
        p.error(f"--plot {png!r} is --out's file too")
    if os.path.splitext(out)[1].lower() == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            p.error("--out *.parquet needs pyarrow (pip install pyarrow); or write .csv")
    return out, png


def run(p, a) -> int:
    """Check every flag, train, and write the History and its plot (both or neither)."""
    from ..train import Trainer

    model, data = _model_and_data(p, a)
    out, png = _outputs(p, a)
    if a.steps < 1:
        p.error(f"--steps {a.steps} must be >= 1")
    net = link_arg(p, "--net", a.net)
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
    title = (f"{a.model} on {a.data}, {a.workers} workers, {a.sync}, {a.arch}"
             + (f", {a.compress}" if a.compress else "") + (f", {a.net}" if a.net else ""))

    def write_history(tmp):  # the History written aside, the plot written and renamed, then the History renamed
        frame.to_csv(tmp) if out.lower().endswith(".csv") else frame.to_parquet(tmp)
        write_atomic(png, lambda tmp_png: _plot(frame, tmp_png, title))

    try:
        write_atomic(out, write_history)
    except OSError as e:  # e.g. the disk filled up: all outputs or none
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
