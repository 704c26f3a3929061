"""The website is legible at the column's width: on a laptop (a 1280 px window, a 676 px column)
and on a phone (390 px, a 343 px column), measured in the same headless Chromium as
test_website.py (its ``site`` fixture; the same requirements).

Per page and width:

- every figure's smallest text is at least 9 px tall as shown: the PNG records its smallest
  text's height in its own pixels (``commlab:min_text_px``, written by
  ``commlab.chapters.figures``), which the page scales by the width it shows the image at over
  the image's own width;
- no table and no display equation is wider than the column (what is past it is hidden);
- no printed block (a ``pre`` outside a code cell: program output, a listing, a command) runs
  more than half a column past it.
"""
from __future__ import annotations

import pytest
from PIL import Image

from test_website import HTML, PAGES, WIDTHS, site  # noqa: F401  (site is the fixture)

MIN_TEXT_PX = 9.0
KEY = "commlab:min_text_px"
SLACK_PX = 2.0  # sub-pixel rounding of widths and a table's borders


def _layout(site, page, width):
    return site.report(page, width)["layout"]


def _smallest_text(page: str, src: str) -> float | None:
    path = (HTML / page).parent / src
    if not path.is_file():
        pytest.fail(f"{page}.html shows {src}, which is not in the build", pytrace=False)
    value = Image.open(path).text.get(KEY)
    return None if value is None else float(value)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES)
def test_figure_text_is_at_least_9px_as_shown(site, page, width):
    bad = []
    for f in _layout(site, page, width)["figures"]:
        px = _smallest_text(page, f["src"])
        if px is None:
            bad.append(f"{f['src']} ({f['at']}) records no text size: draw it in a chapter that calls "
                       "commlab.chapters.figures.for_the_book()")
            continue
        shown = px * min(1.0, f["shown"] / f["natural"]) if f["natural"] else 0.0
        if shown < MIN_TEXT_PX:
            bad.append(f"{f['at']}: smallest text {shown:.1f} px ({px:.1f} px in an image {f['natural']} px wide, "
                       f"shown {f['shown']:.0f} px)")
    assert not bad, f"{page}.html at {width} px: figures whose text is under {MIN_TEXT_PX:g} px:\n" + "\n".join(bad)


def _past(items, limit):
    return [f"{x['at']} {x['width']:.0f} px: {x['what']!r}" for x in items if x["width"] > limit + SLACK_PX]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES)
def test_tables_and_equations_fit_the_column(site, page, width):
    lay = _layout(site, page, width)
    bad = _past(lay["tables"], lay["column"]) + _past(lay["equations"], lay["column"])
    assert not bad, f"{page}.html at {width} px: wider than the {lay['column']:.0f} px column:\n" + "\n".join(bad)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES)
def test_printed_blocks_run_at_most_half_a_column_past_it(site, page, width):
    lay = _layout(site, page, width)
    bad = _past(lay["printed"], 1.5 * lay["column"])
    assert not bad, (f"{page}.html at {width} px: printed blocks more than half the {lay['column']:.0f} px "
                     "column past it:\n" + "\n".join(bad))

