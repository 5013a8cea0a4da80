"""The inputs of a launch: fresh random or structured ones (:func:`random_inputs`) and the
seeded ones a launch whose traffic depends on the data is counted with (:func:`launch_inputs`).

A schedule that branches on floats of the data (:func:`simulator.ir.nodes.branches_on_data`:
``if (!isfinite(v)) continue;``, ``x > 0 ? x : a * x``) has counts that depend on the
values in its input buffers. Counting it without values given (``simulate`` with
``compute_values=False``, the fast path) executes it on :func:`launch_inputs`: the float
inputs :func:`random_inputs` draws from ``numpy.random.default_rng(seed)`` (each input
buffer in the schedule's order; standard-normal float32 values, or the kind of inputs its
launch file's ``reference.inputs`` names: ``positive`` for data a host keeps
non-negative), so ``simulate --seed 0`` with that kind executes on the same values. The
counts are exact for those values; Oclgrind's cross-check launches the kernel on the same
values. numpy only.

Input kinds (:data:`INPUT_KINDS`, ``--inputs`` on the command line): ``normal`` (the
default), ``uniform`` (in [-1, 1)) and ``positive`` (in [0, 1): data a host keeps
non-negative, a variance under a square root) draw independent random values, so an index
error shows in the result. ``ones`` and ``arange`` are structured, for looking at a result by eye, and can hide
index errors: with ``ones`` every element is equal, so any swapped or permuted index gives
the same result; with ``arange`` (element ``i`` of the flattened array is ``i``) a sum visited
in another order, or an index error that maps one term onto an equal one, goes unseen.
"""
from __future__ import annotations

import numpy as np

from tiletraffic.simulator.ir import nodes as S

DATA_SEED = 0
"""The seed of the inputs a data-dependent launch is counted with."""


def launch_inputs(schedule: S.Schedule, seed: int = DATA_SEED) -> dict[str, np.ndarray]:
    """float32 contents of every float input buffer (role ``in`` or ``inout``) of
    ``schedule``, by name, in its logical shape: the float inputs :func:`random_inputs`
    draws from ``numpy.random.default_rng(seed)`` in the kind
    ``schedule.extra["reference_inputs"]`` names (default ``normal``), the same values
    ``simulate --seed`` with that kind of inputs executes on (module docstring)."""
    kind = reference_inputs_kind(schedule)
    floats = {a.name for a in schedule.arrays if a.is_input and not a.is_int}
    drawn = random_inputs(schedule, np.random.default_rng(seed), kind)
    return {name: value for name, value in drawn.items() if name in floats}


def reference_inputs_kind(schedule) -> str:
    """The kind of inputs ``schedule``'s launch file names (``reference.inputs``), else
    ``normal``."""
    return getattr(schedule, "extra", {}).get("reference_inputs", "normal")


INPUT_KINDS = ("normal", "uniform", "positive", "ones", "arange")
"""Kinds of inputs :func:`random_inputs` makes (see the module docstring)."""
RANDOM_INPUT_KINDS = ("normal", "uniform", "positive")
"""The kinds of :data:`INPUT_KINDS` drawn from the random generator (the others ignore it)."""


def random_inputs(schedule: S.Schedule, rng: np.random.Generator,
                  kind: str = "normal") -> dict[str, np.ndarray]:
    """float32 inputs in their logical shapes (A: M×K, ...), for every input array (roles
    ``in`` and ``inout``); a ``half`` array's values are float16 ones (rounded to the
    nearest, held as float32: exactly what the device reads); an integer buffer's are its
    contents (``GlobalArray.values``, int32 or uint32).

    Args:
        rng: the random generator (``normal``: standard normal; ``uniform``: uniform in
            [-1, 1); ``positive``: uniform in [0, 1), for data a host keeps non-negative;
            unused by ``ones`` and ``arange``).
        kind: one of :data:`INPUT_KINDS`; ``arange`` fills an array with 0, 1, 2, ... in
            row-major order (exact in float32 below 2**24 elements).

    Raises:
        ValueError: an unknown ``kind``.
    """
    if kind not in INPUT_KINDS:
        raise ValueError(f"input kind {kind!r} is not one of {', '.join(INPUT_KINDS)}")
    p = schedule.param_values
    out = {}
    for a in schedule.arrays:
        if not a.is_input:
            continue
        shape = [p[s] for s in a.shape]
        if a.is_int:        # an integer buffer holds its given contents, whatever the kind
            out[a.name] = np.asarray(a.values, dtype=np.int64).astype(
                np.int32 if a.dtype == "int" else np.uint32).reshape(shape)
            continue
        if kind == "normal":
            out[a.name] = rng.standard_normal(shape, dtype=np.float32)
        elif kind == "uniform":
            out[a.name] = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
        elif kind == "positive":
            out[a.name] = rng.uniform(0.0, 1.0, shape).astype(np.float32)
        elif kind == "ones":
            out[a.name] = np.ones(shape, dtype=np.float32)
        else:
            out[a.name] = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        if a.is_half:       # values a half buffer holds exactly (float16, as float32)
            out[a.name] = out[a.name].astype(np.float16).astype(np.float32)
    return out
