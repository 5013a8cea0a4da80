"""Inputs and float64 references for the operation a schedule family computes.

Used by the CLI, the device runs and the tests, so that every check draws fresh,
non-constant random inputs (:func:`simulator.engine.data_inputs.random_inputs`: constant
inputs hide swapped indices) and compares against a
float64 reference (with :func:`simulator.engine.tolerance.check_result`, the one K-scaled
tolerance: :func:`error_over_tolerance`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.engine.error_bound import NoErrorBound
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
        error_bound: the running error bound of each element
            (:mod:`simulator.engine.error_bound`), float64, same shape, the tolerance of
            the check where given; None where the K-scaled tolerance applies.
        stored_half: the output stores ``half`` and its tolerance must add the rounding of
            the stored value (``check_result(stored_half=...)``); False where the running
            error bound already includes it.
    """

    output: str
    value: np.ndarray
    abs_product: np.ndarray
    k: int
    error_bound: np.ndarray | None = None
    stored_half: bool = False


class ReferenceFunctionError(ValueError):
    """A user's reference function that gives no usable expected output: a result of the
    wrong shape, not numbers, NaN or infinite values, an output the schedule does not have,
    or one array for a schedule of several outputs."""


def checked_output(schedule: Schedule) -> str:
    """The output :func:`reference` checks: the one named by the schedule's own
    ``extra["reference_function"]``, else its first output."""
    if "reference_function" in schedule.extra:
        return schedule.extra["reference_function"][1]
    return next(a.name for a in schedule.arrays if a.is_output)


def reference(schedule: Schedule, inputs: dict[str, np.ndarray], fn=None,
              sum_length: int | None = None, error_bounds=None) -> Reference:
    """The one reference of :func:`references` (its arguments, errors and sum length).

    Raises:
        ReferenceFunctionError: besides :func:`references`' errors, ``fn`` gives more than
            one output (check them with :func:`references`).
    """
    refs = references(schedule, inputs, fn, sum_length, error_bounds)
    if len(refs) != 1:
        raise ReferenceFunctionError(
            f"{schedule.family}: the reference function gives {len(refs)} outputs "
            f"({', '.join(r.output for r in refs)}); check each (references)")
    return refs[0]


def references(schedule: Schedule, inputs: dict[str, np.ndarray], fn=None,
               sum_length: int | None = None,
               error_bounds: dict[str, np.ndarray] | None = None) -> tuple[Reference, ...]:
    """float64 ``A@B`` (GEMM) or ``A@x`` (matrix-vector) of ``inputs``, or ``fn``'s result:
    one :class:`Reference` per output checked, in the order ``fn`` gives them.

    Args:
        fn: for any other schedule, a function ``inputs -> outputs`` (numpy; called with the
            inputs as float64 arrays in their logical shapes) returning ``{output name:
            array}`` (each output named is checked, in its logical shape; outputs not named
            are not), or for a schedule of one output that output's array. The error bound
            then uses ``fn`` of the inputs' absolute values as ``|A|@|B|``: right for sums
            of products such as GEMM variants, and for exact operations of them (max, abs,
            select).
            Without ``fn``, a schedule's ``extra["reference_function"]``, a pair
            ``(function, output name)``, is used where it has one (the built-in
            demonstration kernels: the function gives that output; other outputs are not
            checked).
        sum_length: the K of the tolerance of every output, as the simulator counted it
            (the largest sum length of the outputs: :mod:`simulator.engine.sum_length`,
            :mod:`simulator.engine.launch_check`); with ``fn`` the schedule's
            ``extra["terms_per_output"]`` (a launch file's ``reference.terms``) replaces it
            where given. Without either, the schedule's ``K`` for a built-in GEMM or
            matrix-vector product, and with ``fn`` the sum length counted by simulating
            the launch (values at the drawn inputs; a launch too large for that raises
            ``ValueError``: count it first).
        error_bounds: with ``fn``, the running error bound of each output at ``inputs``
            (:attr:`simulator.engine.simulation.SimulationResult.error_bounds`) where already
            computed; otherwise computed here by simulating the launch at ``inputs``
            (:func:`bounded_outputs`) where it has at most :data:`ERROR_BOUND_WORK`
            work-item loop steps. Each output checked then
            has that bound as its tolerance (sound where the kernel subtracts, which a
            reference at |inputs| is not); a larger launch, a kernel sequence and a
            built-in GEMM or matrix-vector product (without ``fn``: ``|A|@|B|`` is the
            exact magnitude of its sums) keep the K-scaled tolerance.

    Raises:
        ValueError: without ``fn``, the schedule has no single output or not the inputs A and
            B/x. ReferenceFunctionError (a ``ValueError``): with ``fn``, a result of the wrong
            shape, not numbers, one with NaN or infinite values (at the inputs or at their
            absolute values), no output, an output the schedule does not have, or one
            array for a schedule of several outputs.
    """
    outs = [a.name for a in schedule.arrays if a.is_output]
    ins = [a.name for a in schedule.arrays if a.role == "in"]
    if fn is None and "reference_function" in schedule.extra:   # a built-in schedule's own
        fn, checked = schedule.extra["reference_function"]
        outs = [checked]
    if fn is not None:
        f64 = {name: np.asarray(v, dtype=np.float64) for name, v in inputs.items()}
        values = _outputs_of(schedule, outs, fn(f64))   # what fn raises is passed on as it is
        bounds = _outputs_of(schedule, outs, fn({n: np.abs(v) for n, v in f64.items()}),
                             " at |inputs|")
        if list(bounds) != list(values):
            raise ReferenceFunctionError(
                f"{schedule.family}: the reference function returned {', '.join(values)} and "
                f"at |inputs| {', '.join(bounds)}: return the same outputs for any inputs")
        if "terms_per_output" in schedule.extra:     # the user's own statement wins
            sum_length = int(schedule.extra["terms_per_output"])
        elif sum_length is None:
            sum_length = counted_sum_length(schedule, inputs)
        if error_bounds is None:
            error_bounds = bounded_outputs(schedule, inputs)
        return tuple(Reference(name, value, np.abs(bounds[name]), sum_length,
                               (error_bounds or {}).get(name),
                               _is_half(schedule, name) and (error_bounds or {}).get(name)
                               is None)
                     for name, value in values.items())
    if len(outs) != 1 or len(ins) != 2 or ins[0] != "A":
        raise ValueError(f"{schedule.family}: no reference for inputs {ins} -> outputs {outs}")
    value, abs_product = reference_product(inputs["A"], inputs[ins[1]])
    epilogue = schedule.extra.get("epilogue")
    if epilogue == "relu":   # y = max(A·x, 0): exact on the sum, |A|·|x| >= 0 unchanged
        value = np.maximum(value, 0.0)
    return (Reference(outs[0], value, abs_product,
                      schedule.param_values["K"] if sum_length is None else sum_length,
                      stored_half=_is_half(schedule, outs[0])),)


def _is_half(schedule, name: str) -> bool:
    """Whether the global array ``name`` of ``schedule`` (or of a kernel sequence) stores
    ``half``."""
    return any(a.name == name and a.dtype == "half" for a in schedule.arrays)


def _outputs_of(schedule: Schedule, outs: list[str], result, at: str = ""
                ) -> dict[str, np.ndarray]:
    """A reference function's ``result`` as ``{output name: float64 array}``, each checked
    against the output's logical shape and for finite values (``at``: which inputs it was
    called with, for the message).

    Raises:
        ReferenceFunctionError: as :func:`references` says.
    """
    family = schedule.family
    if isinstance(result, Mapping):
        named = dict(result)
        if not named:
            raise ReferenceFunctionError(f"{family}: the reference function returned no "
                                         f"output; the schedule's are {', '.join(outs)}")
        unknown = [str(name) for name in named if name not in outs]
        if unknown:
            raise ReferenceFunctionError(
                f"{family}: the reference function returned {', '.join(map(repr, unknown))}, "
                f"not an output of the schedule (its outputs: {', '.join(outs)})")
    elif len(outs) != 1:
        raise ReferenceFunctionError(
            f"{family}: the reference function returned one array, the schedule has the "
            f"outputs {', '.join(outs)}: return {{output name: array}} for each to check")
    else:
        named = {outs[0]: result}
    p = schedule.param_values
    out = {}
    for name, raw in named.items():
        try:
            value = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ReferenceFunctionError(f"{family}: the reference function's result for "
                                         f"{name} is not an array of numbers ({err})") from None
        shape = tuple(p[s] for s in schedule.array(name).shape)
        if value.shape != shape:
            raise ReferenceFunctionError(f"{family}: the reference function returned shape "
                                         f"{value.shape}, the output {name} has shape {shape}")
        bad = ~np.isfinite(value)
        if bad.any():
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ReferenceFunctionError(
                f"{family}: the reference function returned {int(bad.sum())} NaN or infinite "
                f"value(s){at} (first at {name}{list(first)})")
        out[name] = value
    return out


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


ERROR_BOUND_WORK = 2**22
"""Most work-item loop steps :func:`bounded_outputs` simulates with error bounds (a few seconds:
about ten times a simulation of the values)."""


def bounded_outputs(schedule: Schedule, inputs: dict[str, np.ndarray]
                    ) -> dict[str, np.ndarray] | None:
    """The running error bound of each output element of ``schedule`` at ``inputs``
    (:mod:`simulator.engine.error_bound`, by simulating the whole launch with values), or
    None for a kernel sequence, a launch of more than :data:`ERROR_BOUND_WORK` work-item
    loop steps, or a kernel calling a function the bound has no rule for
    (:class:`simulator.engine.error_bound.NoErrorBound`)."""
    from tiletraffic.simulator.engine.budget import loop_steps
    from tiletraffic.simulator.engine.simulation import simulate
    from tiletraffic.simulator.ir.sequence import is_sequence

    if is_sequence(schedule) or loop_steps(schedule) > ERROR_BOUND_WORK:
        return None
    try:
        return simulate(schedule, inputs, hazards="report", limits=None,
                        error_bounds=True).error_bounds
    except NoErrorBound:   # a function without a rule: the K-scaled tolerance
        return None


def reference_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 reference ``a @ b`` and ``|a| @ |b|`` for :func:`simulator.engine.tolerance.check_result`.

    ``a`` is (M, K), ``b`` is (K, N) or (K,); both converted to float64 exactly.
    """
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a64 @ b64, np.abs(a64) @ np.abs(b64)


def error_over_tolerance(actual: np.ndarray, ref: Reference) -> float:
    """Largest |actual - reference| / tolerance of an output (<= 1 passes; inf for NaN), with
    the one tolerance (:func:`simulator.engine.tolerance.check_result`: the running error
    bound where ``ref`` has one, else K-scaled). ``actual`` is
    reshaped to the reference's logical shape (a row-major buffer of that many elements)."""
    return check_result(np.asarray(actual).reshape(ref.value.shape), ref.value, ref.k,
                        ref.abs_product, error_bound=ref.error_bound,
                        stored_half=ref.stored_half).error_over_tolerance
