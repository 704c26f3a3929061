"""The command line: ``python -m commlab train | simulate | advise | rules | profile | classroom``.

One module per verb, each a thin layer over a library function: it adds its flags to the parser
(``add(sub, fmt)``) and turns the parsed flags into a call and a printed report (``run(p, a)``);
a bad flag or name ends with ``p.error``: a message that names the valid choices and exit status
2, before anything runs.

* :mod:`~commlab.cli.train`: one :class:`commlab.Trainer` run (every dimension a flag), a
  progress bar, the History as CSV (or Parquet, with pyarrow installed), and a PNG of the loss::

      python -m commlab train --model mlp --data digits --workers 8 --sync "ssp(staleness=2)" \\
          --arch ps --compress "topk(0.01)+ef" --net 10GbE --steps 300 --out run.csv

* :mod:`~commlab.cli.simulate`: one data-parallel iteration of a built-in profile (or a profile
  file) on a cluster of :mod:`commlab.sim`, its timeline summary, and the speedup table from 1 GPU
  up::

      python -m commlab simulate --model resnet50 --gpus 32 --net 100GbIB --method mg_wfbp

* :mod:`~commlab.cli.advise`: the configurations of :func:`commlab.advisor.advise` ranked by
  predicted time to a target, with their reasoning::

      python -m commlab advise --model resnet50 --gpus 32 --net 10GbE --target 5000

* :mod:`~commlab.cli.rules`: the tables of allowed combinations (:func:`commlab.rules.markdown`).
* :mod:`~commlab.cli.profile`: your own model measured layer by layer
  (:func:`commlab.sim.measure`) and saved as a profile file; :mod:`commlab.own_model` reads the
  ``pkg.module:name`` builders and loaders that ``train`` takes too.
* :mod:`~commlab.cli.classroom`: ``classroom student | grade``, the student edition of the
  chapters and a gradebook of the notebooks students hand in.

:mod:`~commlab.cli.names` lists the names each dimension offers (every ``--help`` epilog) and
checks a flag's name against them; :mod:`~commlab.cli.cluster` reads the cluster and the model that
``simulate`` and ``advise`` share; :mod:`~commlab.cli.outputs` checks the files ``profile`` and
``train`` write before any work starts.
"""
from __future__ import annotations

import argparse

from . import advise, classroom, profile, rules, simulate, train

VERBS = (train, simulate, advise, rules, profile, classroom)  # the order --help lists them in


def parser() -> argparse.ArgumentParser:
    """The argparse parser: one subcommand per verb, each epilog listing the valid names."""
    top = argparse.ArgumentParser(prog="python -m commlab", description="commlab from the command line")
    sub = top.add_subparsers(dest="command", required=True, metavar="{train,simulate,advise,profile,rules,classroom}")
    for verb in VERBS:
        verb.add(sub, argparse.RawDescriptionHelpFormatter)
    return top


def main(argv=None) -> int:
    """Parse ``argv`` (sys.argv when None), run the chosen subcommand and return its exit code."""
    p = parser()
    a = p.parse_args(argv)
    sub = p._subparsers._group_actions[0].choices[a.command]
    verb = next(v for v in VERBS if v.NAME == a.command)
    return verb.run(sub, a)
