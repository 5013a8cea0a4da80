"""Inputs and float64 references for the operation a schedule family computes.

Used by the CLI, the device runs and the tests, so that every check draws fresh,
non-constant random inputs (constant inputs hide swapped indices) and compares against a
float64 reference (with ``gpu.runtime.check_result``, the one K-scaled tolerance).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .schedule import Schedule


@dataclass(frozen=True)
class Reference:
    """The float64 result of a schedule's operation.

    Attributes:
        output: name of the output array (``C`` or ``y``).
        value: float64 result in the output's logical shape (C: M×N; y: M).
        abs_product: ``|A|@|B|`` (or ``|A|@|x|``) in float64, same shape, for error bounds.
        k: the dot-product length K.
    """

    output: str
    value: np.ndarray
    abs_product: np.ndarray
    k: int


def random_inputs(schedule: Schedule, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Fresh standard-normal float32 inputs in their logical shapes (A: M×K, ...)."""
    p = schedule.param_values
    return {a.name: rng.standard_normal([p[s] for s in a.shape], dtype=np.float32)
            for a in schedule.arrays if a.role == "in"}


def reference(schedule: Schedule, inputs: dict[str, np.ndarray]) -> Reference:
    """float64 ``A@B`` (GEMM) or ``A@x`` (matrix-vector) of ``inputs``.

    Raises:
        ValueError: the schedule has no single output or not the inputs A and B/x.
    """
    outs = [a.name for a in schedule.arrays if a.role == "out"]
    ins = [a.name for a in schedule.arrays if a.role == "in"]
    if len(outs) != 1 or len(ins) != 2 or ins[0] != "A":
        raise ValueError(f"{schedule.family}: no reference for inputs {ins} -> outputs {outs}")
    a = np.asarray(inputs["A"], dtype=np.float64)
    b = np.asarray(inputs[ins[1]], dtype=np.float64)
    return Reference(outs[0], a @ b, np.abs(a) @ np.abs(b), schedule.param_values["K"])
