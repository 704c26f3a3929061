"""The advisor: measured convergence penalties (:mod:`.penalties`) and the ranking of
configurations by predicted time to a target on a cluster (:mod:`.advise`)."""
from .advise import advise
from .penalties import OPTIONS, load, measure

__all__ = ["advise", "OPTIONS", "load", "measure"]
