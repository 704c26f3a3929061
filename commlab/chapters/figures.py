"""How the book's figures leave a notebook: PNG images that record the size of their smallest text.

The website shows a figure at most as wide as its column (676 px at a 1280 px window); a wider
figure is scaled down, and its text with it. A figure is legible when its smallest text is at
least 9 px tall as shown. What that takes follows from the figure's width W in inches alone: a
font of f points is f * dpi / 72 px in the image, and the image is scaled by 676 / (W * dpi)
when it is wider than the column, so the text is shown at f * 676 / (72 W) px. A figure 6.8 in
wide needs fonts of at least 6.5 pt; a 12 in one, 11.5 pt everywhere. The chapters draw for the
column: at most 6.9 in wide, fonts of 7 pt and more, panels stacked rather than squeezed.

:func:`for_the_book` (each chapter's first cell calls it) makes every figure the notebook shows
a PNG whose text chunk ``commlab:min_text_px`` holds the smallest visible text's height in the
image's own pixels, so the website test can check the rule on every figure as shown.
"""
from __future__ import annotations

import io
import textwrap

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.text import Text

KEY = "commlab:min_text_px"


def smallest_text_px(fig: Figure) -> float:
    """Height in pixels of the figure's smallest visible, non-empty text (its font size at
    the figure's dpi); ``inf`` for a figure with no text. Draws the figure first, so tick labels
    are the ones shown."""
    fig.canvas.draw()
    sizes = [t.get_fontsize() for t in _shown_texts(fig)]
    return min(sizes, default=float("inf")) * fig.dpi / 72


def _shown_texts(artist):
    """The non-empty texts under ``artist`` that are drawn: visible, and inside no hidden artist."""
    if not artist.get_visible():
        return
    if isinstance(artist, Text) and artist.get_text().strip():
        yield artist
    for child in artist.get_children():
        yield from _shown_texts(child)


def fit_titles(fig: Figure) -> bool:
    """Break the lines of every title wider than the figure (its suptitle, the axes' titles)
    so that it fits, and lay the figure out again if one was broken: a tight bounding box would
    otherwise widen the image to hold the title, and shrink everything else on the page.
    Returns whether a title was broken."""
    fig.canvas.draw()
    width = fig.bbox.width
    titles = list(fig.texts) + [t for ax in fig.axes for t in (ax.title, ax._left_title, ax._right_title)]
    broken = False
    for t in titles:
        text, extent = t.get_text(), t.get_window_extent().width
        if t.get_visible() and text and extent > 0.98 * width:
            chars = max(20, int(len(max(text.splitlines(), key=len)) * 0.95 * width / extent))
            t.set_text("\n".join(textwrap.fill(line, chars) for line in text.splitlines()))
            broken = True
    if broken and not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.tight_layout()
    return broken


def png(fig: Figure) -> bytes:
    """The figure as the notebook shows it (PNG, tight bounding box, titles fitted to its
    width), with its smallest text's height in pixels under :data:`KEY`."""
    fit_titles(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", metadata={KEY: f"{smallest_text_px(fig):.2f}"})
    return buf.getvalue()


def for_the_book():
    """Show every matplotlib figure of this IPython session through :func:`png`. Does nothing
    outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    plt.close(plt.figure())  # the notebook's backend sets its own formatter once, on first use
    shell.display_formatter.formatters["image/png"].for_type(Figure, png)
