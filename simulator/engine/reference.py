"""Inputs and float64 references for the operation a schedule family computes.

Used by the CLI, the device runs and the tests, so that every check draws fresh,
non-constant random inputs (constant inputs hide swapped indices) and compares against a
float64 reference (with :func:`simulator.engine.tolerance.check_result`, the one K-scaled
tolerance: :func:`error_over_tolerance`).

Input kinds (:data:`INPUT_KINDS`, ``--inputs`` on the command line): ``normal`` (the
default) and ``uniform`` draw independent random values, so an index error shows in the
result. ``ones`` and ``arange`` are structured, for looking at a result by eye, and can hide
index errors: with ``ones`` every element is equal, so any swapped or permuted index gives
the same result; with ``arange`` (element ``i`` of the flattened array is ``i``) a sum visited
in another order, or an index error that maps one term onto an equal one, goes unseen.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.engine.tolerance import check_result


@dataclass(frozen=True)
class Reference:
    """The float64 result of a schedule's operation.

    Attributes:
        output: name of the output array (``C`` or ``y``).
        value: float64 result in the output's logical shape (C: M×N; y: M).
        abs_product: ``|A|@|B|`` (or ``|A|@|x|``) in float64, same shape, for error bounds.
        k: the K of the tolerance: the largest sum length of the output
            (:mod:`simulator.engine.sum_length`; the dot-product length K of a GEMM).
    """

    output: str
    value: np.ndarray
    abs_product: np.ndarray
    k: int


INPUT_KINDS = ("normal", "uniform", "ones", "arange")
"""Kinds of inputs :func:`random_inputs` makes (see the module docstring)."""
RANDOM_INPUT_KINDS = ("normal", "uniform")
"""The kinds of :data:`INPUT_KINDS` drawn from the random generator (the others ignore it)."""


def random_inputs(schedule: Schedule, rng: np.random.Generator,
                  kind: str = "normal") -> dict[str, np.ndarray]:
    """float32 inputs in their logical shapes (A: M×K, ...), for every input array (roles
    ``in`` and ``inout``).

    Args:
        rng: the random generator (``normal``: standard normal; ``uniform``: uniform in
            [-1, 1); unused by ``ones`` and ``arange``).
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
        if kind == "normal":
            out[a.name] = rng.standard_normal(shape, dtype=np.float32)
        elif kind == "uniform":
            out[a.name] = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
        elif kind == "ones":
            out[a.name] = np.ones(shape, dtype=np.float32)
        else:
            out[a.name] = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return out


class ReferenceFunctionError(ValueError):
    """A user's reference function that gives no usable expected output: more than one
    output, a result of the wrong shape, not numbers, or NaN or infinite values."""


def checked_output(schedule: Schedule) -> str:
    """The output :func:`reference` checks: the one named by the schedule's own
    ``extra["reference_function"]``, else its first output."""
    if "reference_function" in schedule.extra:
        return schedule.extra["reference_function"][1]
    return next(a.name for a in schedule.arrays if a.is_output)


def reference(schedule: Schedule, inputs: dict[str, np.ndarray], fn=None,
              sum_length: int | None = None) -> Reference:
    """float64 ``A@B`` (GEMM) or ``A@x`` (matrix-vector) of ``inputs``, or ``fn``'s result.

    Args:
        fn: for any other schedule, a function ``inputs -> output`` (numpy; called with the
            inputs as float64 arrays in their logical shapes) returning the single output in
            its logical shape. The error bound then uses ``fn`` of the inputs' absolute
            values as ``|A|@|B|``: right for sums of products such as GEMM variants, and
            for exact operations of them (max, abs, select).
            Without ``fn``, a schedule's ``extra["reference_function"]``, a pair
            ``(function, output name)``, is used where it has one (the built-in
            demonstration kernels: the function gives that output; other outputs are not
            checked).
        sum_length: the K of the tolerance, as the simulator counted it
            (:mod:`simulator.engine.sum_length`, :mod:`simulator.engine.launch_check`); with ``fn`` the
            schedule's ``extra["terms_per_output"]`` (a launch file's ``reference.terms``)
            replaces it where given. Without either, the schedule's ``K`` for a built-in
            GEMM or matrix-vector product, and with ``fn`` the sum length counted by
            simulating the launch
            (values at the drawn inputs; a launch too large for that raises ``ValueError``:
            count it first).

    Raises:
        ValueError: without ``fn``, the schedule has no single output or not the inputs A and
            B/x. ReferenceFunctionError (a ``ValueError``): with ``fn``, a result of the wrong
            shape, not numbers, one with NaN or infinite values (at the inputs or at their
            absolute values), or more than one output.
    """
    outs = [a.name for a in schedule.arrays if a.is_output]
    ins = [a.name for a in schedule.arrays if a.role == "in"]
    if fn is None and "reference_function" in schedule.extra:   # a built-in schedule's own
        fn, checked = schedule.extra["reference_function"]
        outs = [checked]
    if fn is not None:
        if len(outs) != 1:
            raise ReferenceFunctionError(f"{schedule.family}: a reference function gives one "
                                         f"output, the schedule has {outs}")
        out = schedule.array(outs[0])
        p = schedule.param_values
        shape = tuple(p[s] for s in out.shape)
        f64 = {name: np.asarray(v, dtype=np.float64) for name, v in inputs.items()}
        result = fn(f64)   # what the function raises is its own error, passed on as it is
        try:
            value = np.asarray(result, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ReferenceFunctionError(f"{schedule.family}: the reference function's result "
                                         f"is not an array of numbers ({err})") from None
        if value.shape != shape:
            raise ReferenceFunctionError(f"{schedule.family}: the reference function returned "
                                         f"shape {value.shape}, the output {outs[0]} has "
                                         f"shape {shape}")
        bound = np.abs(np.asarray(fn({n: np.abs(v) for n, v in f64.items()}),
                                  dtype=np.float64))
        for what, values in (("", value), (" at |inputs|", bound)):
            bad = ~np.isfinite(values)
            if bad.any():
                first = tuple(int(i) for i in np.argwhere(bad)[0])
                raise ReferenceFunctionError(
                    f"{schedule.family}: the reference function returned {int(bad.sum())} NaN "
                    f"or infinite value(s){what} (first at {outs[0]}{list(first)})")
        if "terms_per_output" in schedule.extra:     # the user's own statement wins
            sum_length = int(schedule.extra["terms_per_output"])
        elif sum_length is None:
            sum_length = counted_sum_length(schedule, inputs)
        return Reference(outs[0], value, bound, sum_length)
    if len(outs) != 1 or len(ins) != 2 or ins[0] != "A":
        raise ValueError(f"{schedule.family}: no reference for inputs {ins} -> outputs {outs}")
    value, abs_product = reference_product(inputs["A"], inputs[ins[1]])
    epilogue = schedule.extra.get("epilogue")
    if epilogue == "relu":   # y = max(A·x, 0): exact on the sum, |A|·|x| >= 0 unchanged
        value = np.maximum(value, 0.0)
    return Reference(outs[0], value, abs_product,
                     schedule.param_values["K"] if sum_length is None else sum_length)


COUNTED_SUM_LENGTH_WORK = 2**26
"""Most work-item loop steps :func:`counted_sum_length` simulates (seconds)."""


def counted_sum_length(schedule: Schedule, inputs: dict[str, np.ndarray]) -> int:
    """The largest sum length of the schedule's outputs, by simulating the launch with
    ``inputs`` (:mod:`simulator.engine.sum_length`).

    Raises:
        ValueError: the launch is larger than :data:`COUNTED_SUM_LENGTH_WORK` work-item loop
            steps (count it with :func:`simulator.engine.launch_check.check_launch`).
    """
    from tiletraffic.simulator.engine.budget import loop_steps
    from tiletraffic.simulator.engine.simulation import simulate
    from tiletraffic.simulator.engine.sum_length import largest

    if loop_steps(schedule) > COUNTED_SUM_LENGTH_WORK:
        raise ValueError(f"{schedule.family}: the launch is too large to count its sum length "
                         "by a full simulation; pass sum_length from check_launch")
    res = simulate(schedule, inputs, hazards="report", limits=None, sum_lengths=True)
    return max([0, *(largest(v) for v in res.sum_lengths.values())])


def reference_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 reference ``a @ b`` and ``|a| @ |b|`` for :func:`simulator.engine.tolerance.check_result`.

    ``a`` is (M, K), ``b`` is (K, N) or (K,); both converted to float64 exactly.
    """
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a64 @ b64, np.abs(a64) @ np.abs(b64)


def error_over_tolerance(actual: np.ndarray, ref: Reference) -> float:
    """Largest |actual - reference| / tolerance of an output (<= 1 passes; inf for NaN), with
    the one K-scaled tolerance (:func:`simulator.engine.tolerance.check_result`). ``actual`` is
    reshaped to the reference's logical shape (a row-major buffer of that many elements)."""
    return check_result(np.asarray(actual).reshape(ref.value.shape), ref.value, ref.k,
                        ref.abs_product).error_over_tolerance
