"""What the wire costs: link models and the one table of named links (nominal, measured in the
literature, transports), the simulated clock, closed forms, calibration."""
from . import cost
from .calibrate import calibrate
from .clock import Clock, Network, as_network
from .link import NOMINAL, PROFILES, SOURCES, LinkModel, get_link, register
from . import measured, protocols  # noqa: E402  (they register their links in PROFILES)
from .protocols import PROTOCOLS, Protocol, protocol
from .stragglers import Stragglers

__all__ = ["cost", "calibrate", "Clock", "Network", "as_network", "PROFILES", "NOMINAL", "SOURCES", "LinkModel", "get_link",
           "register", "measured", "protocols", "PROTOCOLS", "Protocol", "protocol", "Stragglers"]
