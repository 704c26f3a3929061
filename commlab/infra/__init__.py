"""Infrastructure: the level below algorithms (the surveys' communication infrastructure, resource
allocation, task scheduling and inference).

Modules, one idea each: :mod:`.switch` (in-network aggregation for real: a switch rank summing
fixed-point chunks through a bounded slot pool), :mod:`.placement` and :mod:`.jobs` (a cluster
receiving a stream of training jobs: placement and queueing policies), :mod:`.inference`
(communication of tensor-parallel decoding, pipeline inference, prefill/decode disaggregation),
:mod:`.faults` (failure rates, Young/Daly checkpoint interval, goodput) and :mod:`.elastic` (a
real run that checkpoints, loses a rank and resumes on the rest). The fabrics, protocols and
in-network aggregation's closed form live in :mod:`commlab.sim`.
"""
