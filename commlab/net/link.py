"""The alpha-beta (Hockney 1994) cost of a message, and the one table of named links.

Sending ``n`` bytes over a link costs ``alpha + n * beta`` seconds: ``alpha`` is the
latency (start-up) of one message, ``beta`` the seconds per byte (1 / bandwidth).

The profiles are nominal figures, chosen as anchors for the book's what-if questions,
not as measurements of any one cluster. Bandwidths are the links' nominal data rates
(the quantitative survey of Shi et al. 2021 ran its testbed on 10GbE and 100Gb/s
InfiniBand; MG-WFBP, Shi, Chu and Li 2019, fits the same alpha-beta form to its
clusters' measured all-reduce times). Latencies are typical one-way message latencies
of each kind of link: microseconds for RDMA and GPU interconnects, tens of
microseconds for TCP over Ethernet, milliseconds across a wide-area network.
Use :func:`commlab.net.calibrate` to fit your own link.

:data:`PROFILES` is the project's one vocabulary of links: ``Trainer(net=...)``,
``sim.Cluster(intra=..., inter=...)``, the planner, the fabrics and the command line all read it
through :func:`get_link`. Beside the nominal profiles below it holds the links measured in the
literature (:mod:`commlab.net.measured`) and the transports of :mod:`commlab.net.protocols`,
each added with :func:`register` and its source in :data:`SOURCES`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LinkModel:
    """A link with latency ``alpha`` (s) and inverse bandwidth ``beta`` (s/byte)."""

    alpha: float
    beta: float
    name: str = "custom"

    def __post_init__(self):
        if not (self.alpha >= 0 and self.beta >= 0):
            raise ValueError(f"LinkModel needs alpha >= 0 and beta >= 0, got alpha={self.alpha!r}, beta={self.beta!r}")

    @classmethod
    def of_rate(cls, gbits: float, latency: float, name: str = "custom") -> "LinkModel":
        """A link of ``gbits`` Gb/s of data and ``latency`` seconds per message (a measured
        ``osu_bw`` and ``osu_latency``, say): beta = 8 / (gbits x 1e9)."""
        if not gbits > 0:
            raise ValueError(f"LinkModel.of_rate needs gbits > 0, got {gbits!r}")
        return cls(latency, _gbit(gbits), name)

    def time(self, nbytes: float) -> float:
        """Seconds to deliver one message of ``nbytes`` bytes."""
        return self.alpha + nbytes * self.beta

    @property
    def bandwidth(self) -> float:
        """Bytes per second (inf for beta = 0)."""
        return float("inf") if self.beta == 0 else 1.0 / self.beta

    def __str__(self) -> str:
        return f"{self.name}: alpha={self.alpha * 1e6:.3g} us, bandwidth={self.bandwidth / 1e9:.3g} GB/s"


def _gbit(gbits_per_s: float) -> float:
    return 8.0 / (gbits_per_s * 1e9)


# nominal figures, each with where it comes from
PROFILES: dict[str, LinkModel] = {
    # PCIe 3.0 x16: 15.75 GB/s nominal per direction; about 12 GB/s is what a copy reaches.
    "PCIe3": LinkModel(5e-6, 1 / 12e9, "PCIe3"),
    # NVLink 2.0 (V100): 25 GB/s per link per direction; two links between a GPU pair.
    "NVLink": LinkModel(2e-6, 1 / 50e9, "NVLink"),
    # Ethernet with TCP: nominal line rate, tens of microseconds per message.
    "10GbE": LinkModel(30e-6, _gbit(10), "10GbE"),
    "100GbE": LinkModel(15e-6, _gbit(100), "100GbE"),
    # 100 Gb/s (EDR) InfiniBand with RDMA: same rate as 100GbE, a tenth of the latency.
    "100GbIB": LinkModel(1.5e-6, _gbit(100), "100GbIB"),
    # A 1 Gb/s wide-area link between data centres: about 10 ms one way.
    "1GbWAN": LinkModel(10e-3, _gbit(1), "1GbWAN"),
}

NOMINAL = tuple(PROFILES)  # the nominal profiles' names, before measured links and transports join

SOURCES: dict[str, str] = {
    "PCIe3": "nominal: PCIe 3.0 x16, 15.75 GB/s per direction, about 12 GB/s reached by a copy; 5 us",
    "NVLink": "nominal: NVLink 2.0 (V100), 25 GB/s per link per direction, two links per GPU pair; 2 us",
    "10GbE": "nominal: 10 Gb/s Ethernet line rate, TCP latency 30 us",
    "100GbE": "nominal: 100 Gb/s Ethernet line rate, TCP latency 15 us",
    "100GbIB": "nominal: 100 Gb/s (EDR) InfiniBand line rate, RDMA latency 1.5 us",
    "1GbWAN": "nominal: 1 Gb/s wide-area link, 10 ms one way",
}

ALIASES = {"pcie": "PCIe3", "pcie3": "PCIe3", "nvlink": "NVLink", "10gbe": "10GbE", "100gbe": "100GbE",
           "100gbib": "100GbIB", "ib": "100GbIB", "infiniband": "100GbIB", "wan": "1GbWAN", "1gbwan": "1GbWAN"}


def register(link: LinkModel, source: str) -> LinkModel:
    """Add ``link`` to :data:`PROFILES` under its name, with where its figures come from."""
    if not isinstance(link, LinkModel) or link.name in PROFILES:
        raise ValueError(f"register needs a LinkModel with a new name, got {link!r}")
    if not (isinstance(source, str) and source):
        raise ValueError(f"register needs the link's source, got {source!r}")
    PROFILES[link.name], SOURCES[link.name] = link, source
    return link


def get_link(link) -> LinkModel:
    """A LinkModel from itself or a name of :data:`PROFILES` (nominal profiles also case-insensitive)."""
    if isinstance(link, LinkModel):
        return link
    if isinstance(link, str):
        key = link if link in PROFILES else ALIASES.get(link.lower().replace(" ", "").replace("-", ""))
        if key is not None:
            return PROFILES[key]
    raise ValueError(f"unknown link {link!r}; valid: {', '.join(PROFILES)} (or a LinkModel(alpha, beta))")
