"""What the wire costs: link models and profiles, the simulated clock, closed forms, calibration."""
from . import cost
from .calibrate import calibrate
from .clock import Clock, Network, as_network
from .link import PROFILES, LinkModel, get_link
from .stragglers import Stragglers

__all__ = ["cost", "calibrate", "Clock", "Network", "as_network", "PROFILES", "LinkModel", "get_link", "Stragglers"]
