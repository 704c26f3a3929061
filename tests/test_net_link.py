"""commlab.net.link: the alpha-beta cost of a message, a link from a measured rate, the one table of
named links (case-insensitive for the nominal ones), and the refusals that name what is valid."""
import pytest

from commlab.net.link import PROFILES, LinkModel, get_link


def test_a_message_costs_alpha_plus_n_beta():
    link = LinkModel(25e-6, 1e-9, "x")
    assert link.time(1e6) == pytest.approx(25e-6 + 1e-3) and link.bandwidth == pytest.approx(1e9)
    assert LinkModel(0.0, 0.0).bandwidth == float("inf")


def test_a_measured_rate_is_the_closed_form():
    link = LinkModel.of_rate(9.4, 25e-6, "measured")
    assert (link.alpha, link.name) == (25e-6, "measured")
    assert link.time(1e9) == pytest.approx(25e-6 + 8 / 9.4)      # a GB at 9.4 Gb/s
    for bad in (0, -1.0):
        with pytest.raises(ValueError, match=f"needs gbits > 0, got {bad!r}"):
            LinkModel.of_rate(bad, 0.0)
    with pytest.raises(ValueError, match="alpha >= 0"):
        LinkModel.of_rate(1.0, -1e-6)


def test_names_resolve_and_unknown_ones_are_refused():
    assert get_link("10gbe") is PROFILES["10GbE"] and get_link(PROFILES["PCIe3"]) is PROFILES["PCIe3"]
    with pytest.raises(ValueError, match="unknown link 'warp'; valid: PCIe3, NVLink, 10GbE"):
        get_link("warp")
