"""The book's figures record their smallest text and fit their titles (commlab/chapters/figures.py)."""
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.font_manager import FontProperties  # noqa: E402
from PIL import Image  # noqa: E402

from commlab.chapters import figures  # noqa: E402


def test_the_smallest_text_is_its_font_size_at_the_figures_dpi():
    fig, ax = plt.subplots(figsize=(6.8, 3), dpi=100)
    ax.plot([0, 1])
    ax.legend(["a line"], fontsize=7)
    ax.set_title("title", fontsize=12)
    assert abs(figures.smallest_text_px(fig) - 7 * 100 / 72) < 1e-9
    ax.get_legend().set_visible(False)  # hidden text does not count: the tick labels are the smallest
    ticks = FontProperties(size=plt.rcParams["xtick.labelsize"]).get_size_in_points()
    assert abs(figures.smallest_text_px(fig) - ticks * 100 / 72) < 1e-9
    plt.close(fig)


def test_the_png_carries_the_size_and_a_long_title_is_broken_to_fit():
    fig, axes = plt.subplots(2, 1, figsize=(6.8, 6), dpi=100)
    fig.suptitle("a very long title " * 12)
    axes[0].set_title("and an axes title that is much too long for a panel " * 3)
    image = Image.open(io.BytesIO(figures.png(fig)))
    assert float(image.text[figures.KEY]) == round(figures.smallest_text_px(fig), 2)
    assert image.size[0] <= 6.8 * 100 + 2  # the titles did not widen it
    assert "\n" in fig.texts[0].get_text() and "\n" in axes[0].get_title()
    plt.close(fig)


def test_a_title_that_fits_is_left_alone():
    fig, ax = plt.subplots(figsize=(6.8, 3))
    ax.set_title("short")
    assert figures.fit_titles(fig) is False and ax.get_title() == "short"
    plt.close(fig)


def test_outside_ipython_nothing_is_registered():
    assert figures.for_the_book() is None
