"""Real wall-clock measurements that the book and ``benchmarks/`` share (:mod:`.bench`): ping-pong
calibration of a link, all-reduce and gossip times on a runtime, a model's compute time per step,
and the tables the benchmarks print. It sits beside the Trainer, above every dimension it times."""
from . import bench

__all__ = ["bench"]
