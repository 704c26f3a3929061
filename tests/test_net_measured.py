"""net.measured: the links measured in the literature reproduce the measurements they were solved
from, and every link of the one table has a source."""
import pytest

from commlab.arch import ring
from commlab.net.link import PROFILES as LINKS
from commlab.net.link import SOURCES, LinkModel, register
from commlab.net.link import get_link as link
from commlab.net.measured import MEASURED, SURVEY_NODE_CELL


@pytest.mark.parametrize("name,large,small", [("10GbE-survey", 8.2, 1.2), ("100GbE-survey", 16.5, 4.6),
                                              ("100GbIB-survey", 83.2, 16.7)])
def test_survey_links_pass_through_their_two_measured_rates(name, large, small):
    l = LINKS[name]
    assert 8 * 2 ** 20 / l.time(2 ** 20) / 1e9 == pytest.approx(large, rel=1e-12)  # Gb/s of a 1 MB message
    assert 8 * 2 ** 14 / l.time(2 ** 14) / 1e9 == pytest.approx(small, rel=1e-12)  # and of a 16 KB one


def test_the_node_link_gives_back_its_bare_allreduce():
    c = SURVEY_NODE_CELL
    t = c["gpus"] * c["batch"] / c["samples_per_s"] - c["batch"] / c["single"]
    bandwidth_part = ring.cost(c["nbytes"], 4, LINKS["PCIe3-survey"]) - 6 * LINKS["PCIe3-survey"].alpha
    assert bandwidth_part == pytest.approx(t, rel=1e-12)
    assert 3e9 < LINKS["PCIe3-survey"].bandwidth < 6e9  # between one shared x16 port and two private ones


@pytest.mark.parametrize("name,p,a,b", [
    ("10GbE-mgwfbp", 16, 0.0009080981007148093, 7.395651186836712e-10),
    ("56GbIB-mgwfbp", 16, 0.00023583677659915685, 4.0594787739537565e-10),
    ("PCIe3-mgwfbp", 4, 4.204298980348825e-05, 2.0589360830118177e-10),
])
def test_mgwfbp_links_give_back_the_measured_allreduce_fit(name, p, a, b):
    for m in (0, 1e5, 1e8):  # the ring's closed form on the link = the published a + b M
        assert ring.cost(m, p, LINKS[name]) == pytest.approx(a + b * m, rel=1e-12)


def test_every_link_has_a_source_and_a_name():
    assert set(SOURCES) == set(LINKS)
    for name, l in LINKS.items():
        assert l.name == name and l.alpha > 0 and l.beta > 0


def test_one_table_holds_nominal_measured_and_transport_links():
    assert set(MEASURED) < set(LINKS) and {"10GbE", "NVLink", "tcp-10GbE", "rdma-100GbIB"} < set(LINKS)
    from commlab.net.protocols import PROTOCOLS
    assert link("tcp-10GbE") == PROTOCOLS["tcp-10GbE"].link()
    with pytest.raises(ValueError, match="a LinkModel with a new name"):
        register(LinkModel(1e-6, 1e-9, "10GbE"), "again")
    with pytest.raises(ValueError, match="needs the link's source"):
        register(LinkModel(1e-6, 1e-9, "fresh-link"), "")


def test_lookup():
    assert link("100GbIB-survey") is LINKS["100GbIB-survey"]
    assert link("NVLink").name == "NVLink"  # a nominal profile of commlab.net.link
    mine = LinkModel(1e-6, 1e-9)
    assert link(mine) is mine
    with pytest.raises(ValueError, match="'bogus'.*100GbIB-survey.*NVLink"):
        link("bogus")
