"""Infrastructure: the level below algorithms (the surveys' communication infrastructure, resource
allocation, task scheduling and inference).

What joins these modules is not an import but a question: what the machines, the cluster and its
operators do to a training or serving job, beyond the algorithm that trains it. They sit above
the simulator and the runtime and use both; none is used by the algorithms below.

Modules, one idea each:

* the cluster's job stream: :mod:`.placement` (where a job's GPUs go), :mod:`.queue_policies` (the
  registry of queue policies: FIFO, SJF, Tiresias' LAS; one line registers another) and
  :mod:`.jobs` (the event loop that runs a stream of jobs through a queue policy and a placement);
* serving: :mod:`.inference` (communication of tensor-parallel decoding, pipeline inference,
  prefill/decode disaggregation);
* failures: :mod:`.faults` (failure rates, Young/Daly checkpoint interval, goodput) and
  :mod:`.elastic` (a real run that checkpoints, loses a rank and resumes on the rest).

The fabrics and transport protocols live in :mod:`commlab.sim` and :mod:`commlab.net`; in-network
aggregation, an architecture the Trainer runs (``arch="switchml"``), in :mod:`commlab.arch.switch`.
"""
