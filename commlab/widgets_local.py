"""The interactive panel of chapter 05 (local SGD and FedAvg). Like :mod:`commlab.widgets`, it
first draws its default figure (what the static website shows), then offers ipywidgets
controls that redraw it.

:func:`local_sgd_explorer` trains on the fly: BSP and local SGD with period H, 8 workers, the
MLP on digits, on an IID split or a Dirichlet split with concentration ``alpha``. Every run
is cached, so moving back to a setting is instant; a new one takes a second or two.
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from . import plots_local
from .data import load, split_dirichlet, split_iid
from .history import History

PERIODS = (1, 2, 4, 8, 16, 32, 64, 128)
ALPHAS = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0)
_CACHE: dict = {}
# Trainer options the explorer leaves at their defaults (a remembered run must too)
_DEFAULTS = dict(arch="native", compress=None, schedule=None, runtime="threads", batch_size=32, momentum=0.0,
                 weight_decay=0.0)


def run_settings(period: int, alpha: float | None, steps: int = 256, workers: int = 8, lr: float = 0.5,
                 seed: int = 0) -> dict:
    """The Trainer arguments of one explorer run: BSP for H = 1, local SGD with period H
    otherwise, evaluated after every averaging (``eval_every = H``); ``alpha=None`` is the
    IID split."""
    if period not in PERIODS:
        raise ValueError(f"period must be one of {PERIODS}, got {period!r}")
    if steps % period:
        raise ValueError(f"steps ({steps}) must be a multiple of the period ({period}), so that the run "
                         "ends on an average")
    split = dict(split="iid") if alpha is None else dict(split="dirichlet", dirichlet_alpha=alpha)
    sync = "bsp" if period == 1 else f"local_sgd(period={period})"
    return dict(model="mlp", data="digits", workers=workers, sync=sync, lr=lr, seed=seed, net="10GbE",
                eval_every=period, progress=False, **split)


def _key(settings: dict, steps: int) -> tuple:
    alpha = settings.get("dirichlet_alpha") if settings["split"] == "dirichlet" else None
    return (settings["sync"], alpha, steps, settings["workers"], settings["lr"], settings["seed"])


def _matches(h: History, settings: dict, steps: int) -> bool:
    c = h.config
    want = {**_DEFAULTS, **{k: v for k, v in settings.items() if k not in ("net", "progress")}}
    return all(c.get(k) == v for k, v in want.items()) and len(h.steps) == steps


def local_sgd_run(period: int, alpha: float | None, steps: int = 256, workers: int = 8, lr: float = 0.5,
                  seed: int = 0) -> History:
    """One explorer run (cached): see :func:`run_settings`."""
    from .train import Trainer

    settings = run_settings(period, alpha, steps, workers, lr, seed)
    key = _key(settings, steps)
    if key not in _CACHE:
        _CACHE[key] = Trainer(**settings).fit(steps=steps)
    return _CACHE[key]


def remember(histories, steps: int = 256, workers: int = 8, lr: float = 0.5, seed: int = 0) -> int:
    """Put runs made elsewhere into the cache: ``histories`` is {(period, alpha): History}. Each
    must have been made with :func:`run_settings` of its key (checked against its config);
    returns how many were taken."""
    for (period, alpha), h in dict(histories).items():
        settings = run_settings(period, alpha, steps, workers, lr, seed)
        if not _matches(h, settings, steps):
            raise ValueError(f"the History for (period={period}, alpha={alpha}) was not made with "
                             f"run_settings({period}, {alpha}, steps={steps}, workers={workers}, lr={lr}, "
                             f"seed={seed})")
        _CACHE[_key(settings, steps)] = h
    return len(dict(histories))


def explorer_figure(period: int = 8, alpha: float | None = 0.1, steps: int = 256, workers: int = 8,
                    lr: float = 0.5, seed: int = 0):
    """The explorer's panel: the split's classes per worker, and test accuracy against
    communication rounds for BSP and for local SGD with period H. Returns the two axes."""
    data = load("digits", seed=seed)
    shards = (split_iid(len(data.y_train), workers, seed) if alpha is None
              else split_dirichlet(data.y_train, workers, alpha, seed))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [1, 1.5]})
    split = "IID split" if alpha is None else f"Dirichlet split, a = {alpha:g}"
    plots_local.label_distribution(data.y_train, shards, data.num_classes, ax=left,
                                   title=f"Classes per worker ({split})")
    bsp = local_sgd_run(1, alpha, steps, workers, lr, seed)
    runs = {"BSP (H = 1)": bsp}
    finals = f"BSP {bsp.final_accuracy:.3f}"
    if period > 1:
        local = local_sgd_run(period, alpha, steps, workers, lr, seed)
        runs[f"local SGD, H = {period}"] = local
        finals += f", H = {period}: {local.final_accuracy:.3f}"
    plots_local.accuracy_curves(runs, x="rounds", logx=True, ax=right,
                                title=f"MLP on digits, {workers} workers, {steps} steps, SGD step {lr}\n"
                                      f"final test accuracy: {finals}")
    right.set_ylim(0, 1)
    fig.tight_layout()
    return left, right


def local_sgd_explorer(period: int = 8, alpha: float | None = 0.1, steps: int = 256, workers: int = 8,
                       lr: float = 0.5, seed: int = 0, known=None):
    """Local SGD against BSP on IID and non-IID data. Controls: the period H and the Dirichlet
    concentration a (or IID). ``known``: runs already made, {(period, alpha): History}, so
    that the static figure trains nothing new (see :func:`remember`)."""
    import ipywidgets as w
    from IPython.display import display

    if known:
        remember(known, steps, workers, lr, seed)

    def draw(h, a):  # the slider's "iid" is alpha=None (a slider cannot hold None)
        explorer_figure(h, None if a == "iid" else a, steps, workers, lr, seed)
        plt.show()

    draw(period, alpha)  # the static figure
    alphas = sorted(set(ALPHAS) | ({alpha} if alpha is not None else set()))
    options = [(f"{a:g}", a) for a in alphas] + [("IID", "iid")]
    controls = dict(
        h=w.SelectionSlider(options=list(PERIODS), value=period, description="period H", continuous_update=False),
        a=w.SelectionSlider(options=options, value="iid" if alpha is None else alpha, description="Dirichlet a",
                            continuous_update=False),
    )
    ui = w.interactive(draw, **controls)
    display(ui)
    return ui
