"""sim.links: the calibrated links reproduce the measurements they were solved from."""
import pytest

from commlab.arch import ring
from commlab.net.link import LinkModel
from commlab.sim import LINKS, SOURCES, link


def test_survey_infiniband_passes_through_its_two_points():
    ib = LINKS["100GbIB-survey"]
    assert ib.time(16 * 1024) == pytest.approx(7.85e-6, rel=1e-12)
    assert ib.time(32 * 1024) == pytest.approx(10.1e-6, rel=1e-12)


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


def test_lookup():
    assert link("100GbIB-survey") is LINKS["100GbIB-survey"]
    assert link("NVLink").name == "NVLink"  # a nominal profile of commlab.net.link
    mine = LinkModel(1e-6, 1e-9)
    assert link(mine) is mine
    with pytest.raises(ValueError, match="'bogus'.*100GbIB-survey.*NVLink"):
        link("bogus")
