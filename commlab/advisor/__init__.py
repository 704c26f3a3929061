"""The advisor: measured convergence penalties (:mod:`.penalties`), whether the Trainer runs a
configuration (:mod:`.runnable`), and the ranking of configurations by predicted time to a target
on a cluster (:mod:`.advise`)."""
from .advise import advise, trainer_archs
from .penalties import OPTIONS, PROBLEMS, for_ranking, load, measure

__all__ = ["advise", "trainer_archs", "OPTIONS", "PROBLEMS", "for_ranking", "load", "measure"]
