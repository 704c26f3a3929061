"""Pipeline parallelism: the model cut into p consecutive stages, the batch into m micro-batches.

Stage s runs its layers on micro-batch i (F_i), sends the activation to stage s+1, and later
runs the backward of micro-batch i (B_i) with the gradient stage s+1 sends back, sending the
gradient of its own input to stage s-1. Gradients accumulate over the m micro-batches, so one
step computes exactly the whole batch's gradient. Two orders of the same ops:

* **GPipe** (Huang et al., NeurIPS 2019): every forward, then every backward.
  p = 3, m = 4 (time runs right; F = forward, B = backward, twice as long)::

      s0  F0 F1 F2 F3 .. .. .. .. B0 B0 B1 B1 B2 B2 B3 B3
      s1  .. F0 F1 F2 F3 .. .. B0 B0 B1 B1 B2 B2 B3 B3 ..
      s2  .. .. F0 F1 F2 F3 B0 B0 B1 B1 B2 B2 B3 B3 .. ..

* **1F1B** (PipeDream-Flush, Narayanan et al., SC'21; also DAPPLE): stage s runs p-s-1 warm-up
  forwards, then alternates one forward and one backward, then drains the backwards::

      s0  F0 F1 F2 .. B0 B0 F3 B1 B1 .. B2 B2 .. B3 B3
      s1  .. F0 F1 F2 B0 B0 F3 B1 B1 .. B2 B2 B3 B3 ..
      s2  .. .. F0 B0 B0 F1 B1 B1 F2 B2 B2 F3 B3 B3 ..

Both leave every stage idle for p-1 forward-plus-backward slots of the m+p-1 the step lasts:
the **bubble** (p-1)/(m+p-1) of the time, with equal stages and free messages; more
micro-batches shrink it. They differ in memory: GPipe holds the activations of all m
micro-batches at once, 1F1B at most p-s on stage s (:func:`peak_activations`), which is why
Megatron-LM uses 1F1B. Bytes: at each stage boundary, m activations forward and m gradients back,
b s h values each for a transformer (b the micro-batch size): 2 m b s h values per step.
"""
from __future__ import annotations

from .. import checks


def _check(p, m) -> None:
    for name, v in (("p (stages)", p), ("m (micro-batches)", m)):
        checks.integer(name, v, where="pipeline", got=True)


def gpipe(p: int, m: int) -> list[list[tuple[str, int]]]:
    """Each stage's ops in GPipe's order: F_0..F_{m-1}, then B_0..B_{m-1}."""
    _check(p, m)
    return [[("F", i) for i in range(m)] + [("B", i) for i in range(m)] for _ in range(p)]


def one_f_one_b(p: int, m: int) -> list[list[tuple[str, int]]]:
    """Each stage's ops in 1F1B's order: min(p-s-1, m) warm-up forwards, then one forward and one
    backward in turn, then the remaining backwards."""
    _check(p, m)
    stages = []
    for s in range(p):
        warm = min(p - s - 1, m)
        ops = [("F", i) for i in range(warm)]
        for i in range(m - warm):
            ops += [("F", warm + i), ("B", i)]
        ops += [("B", i) for i in range(m - warm, m)]
        stages.append(ops)
    return stages


SCHEDULES = {"gpipe": gpipe, "1f1b": one_f_one_b}


def schedule_ops(schedule: str, p: int, m: int) -> list[list[tuple[str, int]]]:
    """Each of the p stages' ops (("F" or "B", micro-batch)) in the named schedule's order."""
    if schedule not in SCHEDULES:
        raise ValueError(f"pipeline schedule {schedule!r} is not known; valid: {', '.join(SCHEDULES)}")
    return SCHEDULES[schedule](p, m)


def bubble_fraction(p: int, m: int) -> float:
    """The idle fraction of a pipeline step with equal stages and free messages: (p-1)/(m+p-1)."""
    _check(p, m)
    return (p - 1) / (m + p - 1)


def peak_activations(schedule: str, p: int, m: int, stage: int) -> int:
    """Most micro-batches whose activations ``stage`` holds at once (forward done, backward not yet):
    m under GPipe, min(m, p - stage) under 1F1B."""
    held = peak = 0
    for op, _ in schedule_ops(schedule, p, m)[stage]:
        held += 1 if op == "F" else -1
        peak = max(peak, held)
    return peak


def run_pipeline(group, stage, schedule: str, m: int, inputs=None, targets=None, loss_fn=None, compute=None,
                 timeline=None):
    """Run this rank's stage (``group.index`` of ``group.size``) of one pipelined step.

    ``inputs``: the m micro-batches (first stage); ``targets`` and ``loss_fn(out, target)`` (last
    stage): micro-batch i's loss is loss_fn / m, so the accumulated gradient is the mean's.
    Activations and their gradients travel over ``group`` (sends are posted with isend and waited
    for at the end, so no order deadlocks on a transport whose send waits for the receive).
    ``compute(op, i) -> seconds`` charges each op on the simulated clock; ``timeline``: a list that
    gets (stage, op, i, start, end) per op, in simulated seconds. Returns the last stage's m losses
    (loss_fn's values), None elsewhere. Gradients accumulate in ``stage``'s parameters."""
    s, p = group.index, group.size
    first, last = s == 0, s == p - 1
    if first and (inputs is None or len(inputs) != m):
        raise ValueError(f"the first pipeline stage needs m={m} input micro-batches")
    if last and (targets is None or len(targets) != m or loss_fn is None):
        raise ValueError(f"the last pipeline stage needs m={m} targets and a loss_fn")
    comm = group.comm
    saved, losses, sends = {}, [], []
    for op, i in schedule_ops(schedule, p, m)[s]:
        if op == "F":
            x = inputs[i] if first else group.recv(s - 1)
            if not first and x.is_floating_point():
                x.requires_grad_(True)
            start = comm.now
            out = stage(x)
            if last:
                loss = loss_fn(out, targets[i])
                losses.append(loss.item())
                out = loss / m
            _charge(comm, compute, timeline, s, op, i, start)
            if not last:
                sends.append(group.isend(out, s + 1))
            saved[i] = (x, out)
        else:
            x, out = saved.pop(i)
            grad = None if last else group.recv(s + 1)
            start = comm.now
            out.backward(grad)
            _charge(comm, compute, timeline, s, op, i, start)
            if not first:
                sends.append(group.isend(x.grad, s - 1))
    for work in sends:
        work.wait()
    return losses if last else None


def _charge(comm, compute, timeline, s, op, i, start) -> None:
    """Charge an op's compute on the clock (before its result is sent) and log it."""
    if compute is not None:
        comm.compute(seconds=compute(op, i))
    if timeline is not None:
        timeline.append((s, op, i, start, comm.now))
