"""An explorer: one figure and the controls that redraw it in place.

Every chapter ends with one. :func:`explore` draws the figure once for the controls' starting
values and displays it under a display id, then displays the controls below it. A change of
any control calls the drawing function again with every control's value and replaces that one
output (IPython's ``update_display``); nothing else is printed. So JupyterLab shows a single
figure that follows the controls, and the website, which has no kernel behind it, keeps the
first drawing as its picture. A setting the drawing refuses (a ``ValueError``: a hypercube of
12 nodes, a layout that does not divide the GPUs) puts its message where the figure was.

``draw(**values)`` returns what it drew: a matplotlib ``Figure``, an ``Axes`` or a sequence of
``Axes``; it must not show it (the figure is closed once displayed, so the notebook's end-of-cell
display does not show it a second time).
"""
from __future__ import annotations

import matplotlib.pyplot as plt


def figure_of(drawn):
    """The Figure behind what a drawing function returned (a Figure, an Axes or Axes)."""
    if isinstance(drawn, plt.Figure):
        return drawn
    if hasattr(drawn, "figure"):
        return drawn.figure
    try:
        return next(iter(drawn)).figure
    except (TypeError, StopIteration, AttributeError):
        raise TypeError(f"a drawing function must return a Figure, an Axes or a sequence of Axes, "
                        f"got {type(drawn).__name__}") from None


def render(draw, values: dict, refused=(ValueError,)):
    """What the explorer shows for ``values``: the drawn Figure (closed, ready to display), or
    the message of a refused setting as text."""
    try:
        fig = figure_of(draw(**values))
    except refused as e:
        plt.close("all")
        return _Message(str(e))
    plt.close(fig)
    return fig


class _Message:
    """A refused setting's message, displayed as plain text where the figure was."""

    def __init__(self, text: str):
        self.text = text

    def _repr_pretty_(self, p, cycle):
        p.text(self.text)

    def __repr__(self):
        return self.text


def explore(draw, controls: dict, refused=(ValueError,)):
    """Display ``draw(**values)`` for the controls' values, then the controls, which redraw that
    same output when changed. ``controls``: {keyword of draw: ipywidgets control}. Returns the
    box of controls (its ``children`` in the order given); its ``shown`` is what the output holds
    now (the last Figure drawn, or a refused setting's message)."""
    import ipywidgets as w
    from IPython.display import DisplayHandle, display

    def values():
        return {name: c.value for name, c in controls.items()}

    box = w.VBox(list(controls.values()))
    box.shown = render(draw, values(), refused)  # what the output holds now: a Figure or a message
    handle = DisplayHandle()  # an id of its own, also outside a kernel (where display prints)
    handle.display(box.shown)

    def redraw(_change):
        box.shown = render(draw, values(), refused)
        handle.update(box.shown)

    for control in controls.values():
        control.observe(redraw, names="value")
    display(box)
    return box
