"""Link models and named profiles."""
import inspect
import math

import pytest

from commlab.net import NOMINAL, PROFILES, LinkModel, get_link
from commlab.net import link as link_module

NAMES = ["PCIe3", "NVLink", "10GbE", "100GbE", "100GbIB", "1GbWAN"]


def test_profiles_exist_with_plausible_figures():
    assert list(PROFILES)[:len(NAMES)] == NAMES == list(NOMINAL)  # the nominal ones first, then the rest
    for name, l in PROFILES.items():
        assert isinstance(l, LinkModel) and l.name == name
        assert 0 < l.alpha < 0.1 and 0 < l.beta < 1e-8
    # what the names promise
    assert PROFILES["10GbE"].bandwidth == pytest.approx(10e9 / 8)
    assert PROFILES["100GbE"].bandwidth == pytest.approx(100e9 / 8)
    assert PROFILES["100GbIB"].beta == PROFILES["100GbE"].beta
    assert PROFILES["100GbIB"].alpha < PROFILES["100GbE"].alpha
    assert PROFILES["NVLink"].bandwidth > PROFILES["PCIe3"].bandwidth > PROFILES["10GbE"].bandwidth
    assert PROFILES["1GbWAN"].alpha == max(l.alpha for l in PROFILES.values())


def test_every_profile_states_its_source():
    """Each profile line is preceded by a comment saying where its figures come from."""
    lines = inspect.getsource(link_module).splitlines()
    for name in NAMES:
        (i,) = [k for k, line in enumerate(lines) if line.strip().startswith(f'"{name}": LinkModel(')]
        above = lines[:i][::-1]
        comments = [line for line in above[:3] if line.strip().startswith("#")]
        assert comments, f"profile {name} has no comment giving its source"
    assert "Hockney 1994" in link_module.__doc__


@pytest.mark.parametrize("spelling,name", [
    ("10GbE", "10GbE"), ("10gbe", "10GbE"), ("10GBE", "10GbE"), ("10-GbE", "10GbE"),
    ("nvlink", "NVLink"), ("NVLINK", "NVLink"), ("pcie", "PCIe3"), ("PCIe3", "PCIe3"),
    ("100gbib", "100GbIB"), ("InfiniBand", "100GbIB"), ("ib", "100GbIB"), ("100GbE", "100GbE"),
    ("wan", "1GbWAN"), ("1GbWAN", "1GbWAN"), ("1 Gb WAN", "1GbWAN"),
])
def test_get_link_by_name_is_case_insensitive(spelling, name):
    assert get_link(spelling) is PROFILES[name]


def test_get_link_passes_a_link_model_through():
    l = LinkModel(1e-3, 1e-9)
    assert get_link(l) is l


@pytest.mark.parametrize("bad", ["40GbE", "", "ethernet", 10, None])
def test_unknown_link_lists_valid_profiles(bad):
    with pytest.raises(ValueError, match="unknown link") as info:
        get_link(bad)
    msg = str(info.value)
    assert "valid: " + ", ".join(PROFILES) in msg
    assert "LinkModel(alpha, beta)" in msg


@pytest.mark.parametrize("alpha,beta", [(-1e-6, 1e-9), (1e-6, -1e-9), (float("nan"), 1e-9), (1e-6, float("nan"))])
def test_link_model_rejects_negative_or_nan(alpha, beta):
    with pytest.raises(ValueError, match="alpha >= 0 and beta >= 0"):
        LinkModel(alpha, beta)


def test_link_model_time_formula():
    l = LinkModel(alpha=2e-6, beta=1e-9, name="x")
    assert l.time(0) == 2e-6
    for n in (1, 1000, 4096, 10**9, 12.5):
        assert l.time(n) == pytest.approx(2e-6 + n * 1e-9, rel=1e-15)
    assert l.bandwidth == pytest.approx(1e9)
    assert LinkModel(0.0, 0.0).time(10**12) == 0.0
    assert math.isinf(LinkModel(0.0, 0.0).bandwidth)


def test_link_model_is_frozen_and_printable():
    l = LinkModel(30e-6, 8e-10, "10GbE")
    with pytest.raises(AttributeError):
        l.alpha = 1.0
    assert str(l) == "10GbE: alpha=30 us, bandwidth=1.25 GB/s"
    assert LinkModel(1, 2) == LinkModel(1, 2)
    assert LinkModel(1, 2).name == "custom"
