"""Inputs and float64 references for the operation a schedule family computes.

Used by the CLI, the device runs and the tests, so that every check draws fresh,
non-constant random inputs (constant inputs hide swapped indices) and compares against a
float64 reference.
"""
from __future__ import annotations

import math
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


def error_factor(k: int) -> float:
    """Relative error factor of a float32 dot product of length ``k``.

    ``min(2·γ_K, γ̃_K)`` with the worst-case γ_K = K·u/(1−K·u) (Higham, *Accuracy and
    Stability of Numerical Algorithms*, 2nd ed., eq. 3.5) and the probabilistic
    γ̃_K = exp(λ·√K·u + K·u²/(1−u)) − 1, λ = 8 (Higham & Mary, SIAM J. Sci. Comput. 2019,
    Theorem 2.4; holds per element with probability > 1 − 1e-9 for K < 2²⁴), u = 2⁻²⁴.
    The worst case grows like K and would let a dropped term pass at large K. The same
    formula is ``gpu.runtime.error_factor`` (gpu may not import this module).
    """
    u = 2.0**-24
    worst = 2.0 * k * u / (1.0 - k * u)
    return min(worst, math.expm1(8.0 * math.sqrt(k) * u + k * u * u / (1.0 - u)))


def tolerance(ref: Reference) -> np.ndarray:
    """Per-element tolerance of a float32 result: ``error_factor(K)·(|A|@|B|) + 2·K·2⁻¹²⁶``."""
    return error_factor(ref.k) * ref.abs_product + 2.0 * ref.k * 2.0**-126


def max_error_ratio(actual: np.ndarray, ref: Reference) -> float:
    """Largest |actual − reference| / tolerance (≤ 1 passes; NaN elements give inf)."""
    err = np.abs(np.asarray(actual, dtype=np.float64) - ref.value)
    err = np.where(np.isnan(err), np.inf, err)
    return float((err / tolerance(ref)).max()) if err.size else 0.0
