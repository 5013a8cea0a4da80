"""The inputs a launch whose traffic depends on the data is counted with.

A schedule that branches on floats of the data (:func:`simulator.ir.nodes.branches_on_data`:
``if (!isfinite(v)) continue;``, ``x > 0 ? x : a * x``) has counts that depend on the
values in its input buffers. Counting it without values given (``simulate`` with
``compute_values=False``, the fast path) executes it on :func:`launch_inputs`: each float
input buffer, in the schedule's order, filled from ``numpy.random.default_rng(seed)`` with
standard-normal float32 values (drawn again where all of them come out equal), or with the
kind of inputs its launch file's ``reference.inputs`` names (``positive`` for data a host
keeps non-negative: :func:`simulator.engine.reference.random_inputs`). The counts are exact
for those values; Oclgrind's cross-check launches the kernel on the same values. numpy only.
"""
from __future__ import annotations

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import eval_static
from tiletraffic.simulator.engine.reference import random_inputs

DATA_SEED = 0
"""The seed of the inputs a data-dependent launch is counted with."""


def launch_inputs(schedule: S.Schedule, seed: int = DATA_SEED) -> dict[str, np.ndarray]:
    """float32 contents of every float input buffer (role ``in`` or ``inout``) of
    ``schedule``, by name, in its logical shape: standard-normal, or of the kind
    ``schedule.extra["reference_inputs"]`` names (module docstring)."""
    params = schedule.param_values
    rng = np.random.default_rng(seed)
    kind = getattr(schedule, "extra", {}).get("reference_inputs", "normal")
    if kind != "normal":
        floats = {a.name for a in schedule.arrays if a.is_input and not a.is_int}
        return {name: value for name, value in random_inputs(schedule, rng, kind).items()
                if name in floats}
    out = {}
    for a in schedule.arrays:
        if a.is_int or not a.is_input:
            continue
        n = int(eval_static(a.size, params))
        host = rng.standard_normal(max(n, 1)).astype(np.float32)
        while host.size > 1 and np.all(host == host[0]):
            host = rng.standard_normal(host.size).astype(np.float32)
        out[a.name] = host[:n].reshape(tuple(params[s] for s in a.shape))
    return out
