"""Counts of a long K loop from three short ones (the K extrapolation accelerator).

A schedule loops over K (the reduction length: columns of A, the parameter named ``K``) in
steps of a fixed depth D. For the built-in families D is the staging width along K (``bk``
of the register-blocked GEMMs, the tile width of ``gemm-tiled``, the chunk of
``matvec-local``, the row width of ``matvec-rows-reduce``, the work-group size of
``matvec-local-whole``, which stages x that many words at a time, 1 for the naive ones).
For any other schedule (a launch file's, a user's) D is derived from the IR
(:func:`_derived_depth`): the least common multiple of the steps of the loops whose bounds
depend on K and of every constant divisor of a value that depends on K, so that K and K + D
run the same steps with the same guards and remainders (a bitwise operator or shift of a
value that depends on K is refused: its period is not derived); a schedule whose local or private
arrays are indexed by a value that depends on K, or whose global array dimension other
than K is, is refused (an access in bounds at a short K is then not known to be in bounds
at the real one). Either way D is also a multiple of the step of every loop whose bounds
mention K. K enters the IR only as the parameter ``K``: in loop bounds, guards
(``k < K``) and the row stride of A. Write K = r + n·P with P = lcm(D, 32) elements:
changing n by one adds P/D steps and moves every
row of A by a whole number of 128-byte lines, so cache-line and sector alignment, the
guards of the last (partial) step and the first step (and a prefetching schedule's
second-to-last) are the same for every n. Every count the traffic model uses is then a sum
of per-step contributions that depend on the step's position modulo P/D only, hence affine
in n: requests, sectors, lines, wavefronts, bank conflicts, loads, stores, FLOPs and
barriers (:class:`simulator.observers.counters.TrafficCounts`,
:class:`simulator.observers.memory.MemoryCounts`),
the barrier intervals with global loads, the distinct sectors per work-group (footprint;
steps P/D apart touch disjoint lines) and the load offsets between neighbouring work-groups
(A's moves by K rows' worth per work-group row).

The argument is checked, not assumed: :func:`extrapolated_observation` (the model's
observation) and :func:`extrapolated_counts` (the traffic counts alone, the fast path of
``simulate``: :mod:`simulator.engine.fast_path`) simulate three K
values n0, n0 + 1, n0 + 2 (in units of P), each by work-group classes, and accepts only if
every figure has equal differences (also the offsets that are ``None``, the keys of every
dict and the number of work-groups). Equal differences at three points do not prove the
periodicity, which rests on D: a D smaller than a loop's true period can agree by chance,
which is why D includes every staging width and divisor above (and a schedule with integers
assigned again, ``While`` loops or integers converted to float is not tried). It then
extrapolates each figure to the real K, and raises
:class:`simulator.engine.accelerators.NotApplicable` (the caller executes the whole loop)
whenever anything differs, a short run reports a hazard, or D is not known
(:func:`applies`, :func:`k_extrapolation_problem` says why; ``tests/test_k_extrapolation.py``
proves the extrapolated model equal to full execution for every family over drawn shapes,
``tests/test_fast_path.py`` the counts of the OpenCL examples). One more
case does not apply: a device model that merges consecutive local loads into vector loads,
with a loop the engine runs in blocks of iterations whose length depends on K
(:func:`merges_k_dependent_blocks`: a long K splits it into several blocks, a short one
does not). The DRAM model is not linear in K: the caller predicts with the real schedule and
the extrapolated counts.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.observers.hazards import HazardError
from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.kernels.families import FAMILIES
from tiletraffic.simulator.ir.static import eval_static, is_vectorizable
from tiletraffic.simulator.ir.visitor import children, walk, walk_statements
from tiletraffic.simulator.engine.accelerators import NotApplicable, data_decline

LINE_ELEMS = 32
"""float32 elements per 128-byte cache line: the alignment that K values must share."""

MIN_STEPS = 4
"""Fewest K steps of the shortest simulated K (first, last and interior steps distinct)."""


def k_step_elems(schedule: Schedule) -> int | None:
    """Depth D of one step of ``schedule``'s K loop (elements of K), or ``None`` where this
    module does not apply (:func:`k_step_problem` says why)."""
    return _k_step(schedule)[0]


def _k_step(schedule: Schedule) -> tuple[int | None, str | None]:
    """(D, None), or (None, why not)."""
    if "K" not in schedule.param_values:
        return None, f"{schedule.family} has no parameter K"
    if any(isinstance(s, _UNCOUNTED) for s in walk_statements(schedule.body)):
        return None, "integers assigned again, while loops, break or continue"
    if any(isinstance(n, S.IntToFloat) for s in schedule.body for n in walk(s)):
        return None, "an integer converted to float"
    if schedule.family in FAMILIES + ("gemm-split-k-slices",):
        depth = _family_depth(schedule)
    else:
        depth, why = _derived_depth(schedule)
        if depth is None:
            return None, why
    for step in _k_loop_steps(schedule.body, schedule.param_values):
        if step is None:
            return None, "a loop over K takes a step that is not one constant"
        depth = math.lcm(depth, step)
    return depth, None


def _family_depth(schedule: Schedule) -> int:
    """D of a built-in family: its staging width along K (module docstring)."""
    if schedule.family in ("gemm-register-blocked", "gemm-vectorized", "gemm-prefetch",
                           "gemm-warp-tiled", "gemm-split-k-slices"):
        # a split-K slice kernel (extra "splits" S): K grows by S·BK per step of every slice
        return int(schedule.extra["bk"]) * int(schedule.extra.get("splits", 1))
    if schedule.family in ("gemm-tiled", "matvec-rows-reduce", "matvec-local-whole"):
        return int(schedule.tile)   # matvec-local-whole: x is staged tile words at a time
    if schedule.family == "matvec-local":
        return int(schedule.extra["chunk"])
    return 1


def _derived_depth(schedule: Schedule) -> tuple[int | None, str | None]:
    """D of any other schedule (a launch file's, a user's), derived from its IR, or
    ``(None, why)``.

    A value *depends on K* when it reads the parameter K, a ``Let`` or loop variable that
    does, or is a loop variable of a loop whose bounds do. D is the least common multiple
    of the steps of the loops whose bounds depend on K and of every constant divisor
    (``/``, ``%``) of a value that depends on K, so that K and K + D run the same steps
    with the same guards and the same remainders; refused (``None``) where a divisor of
    such a value is not one constant, where a local or private array is indexed by a
    value that depends on K (its bounds do not grow with K), or where a global array's
    dimension is indexed by one and that dimension is not K: an access in bounds at a
    short K would not be known to be at the real K.
    """
    params = schedule.param_values
    depends: set[str] = set()
    statics: dict[str, int] = {}     # Lets of one static value (get_local_size, ...)
    bound = [s.var if isinstance(s, S.For) else s.name for s in walk_statements(schedule.body)
             if isinstance(s, (S.Let, S.For))]
    for s in walk_statements(schedule.body):
        if isinstance(s, S.Let) and bound.count(s.name) == 1:
            try:
                statics[s.name] = int(eval_static(s.value, params, statics))
            except (TypeError, KeyError):
                pass

    def reads_k(e) -> bool:
        return any(isinstance(n, S.Param) and n.name == "K" or
                   isinstance(n, S.Var) and n.name in depends for n in walk(e))

    grown = True
    while grown:      # Lets and loop variables, to the fixed point
        grown = False
        for s in walk_statements(schedule.body):
            if isinstance(s, S.Let):
                name, on_k = s.name, reads_k(s.value)
            elif isinstance(s, S.For):
                name, on_k = s.var, any(reads_k(x) for x in (s.start, s.stop, s.step))
            else:
                continue
            if on_k and name not in depends:
                depends.add(name)
                grown = True
    depth = 1
    for s in walk_statements(schedule.body):
        if isinstance(s, S.For) and s.var in depends:
            try:
                depth = math.lcm(depth, abs(int(eval_static(s.step, params, statics))))
            except (TypeError, KeyError):
                return None, f"the loop over {s.var} takes a step that is not one constant"
        for n in _own_nodes(s):
            if isinstance(n, S.BinOp) and n.op in S.BITWISE_OPS and (
                    reads_k(n.left) or reads_k(n.right)):
                return None, (f"{S.describe_int(n)} applies the bitwise operator {n.op} to a "
                              "value that depends on K")
            if isinstance(n, S.BinOp) and n.op in ("/", "%") and reads_k(n.left):
                try:
                    divisor = abs(int(eval_static(n.right, params, statics)))
                except (TypeError, KeyError):
                    divisor = 0
                if divisor == 0 or reads_k(n.right):
                    return None, (f"{S.describe_int(n)} divides a value that depends on K "
                                  "by one that is not a constant")
                depth = math.lcm(depth, divisor)
            why = _index_problem(n, reads_k)
            if why is not None:
                return None, why
    return depth, None


def _own_nodes(stmt):
    """The expression nodes of ``stmt`` itself (not those of the statements it holds)."""
    for child in children(stmt):
        if not isinstance(child, S.Stmt):
            yield from walk(child)


def _index_problem(node, reads_k) -> str | None:
    """Why an access ``node`` indexed by a value that depends on K (``reads_k``) may be in
    bounds at a short K and not at the real one; ``None`` where it cannot."""
    array = getattr(node, "array", None)
    index = getattr(node, "index", None)
    if array is None or index is None or not isinstance(index, tuple):
        return None
    for d, i in enumerate(index):
        if not reads_k(i):
            continue
        if isinstance(array, S.GlobalArray):
            if array.shape[d] != "K":
                return (f"dimension {d} of {array.name} ({array.shape[d]}) is indexed by "
                        f"{S.describe_int(i)}, which depends on K")
        else:
            return (f"{array.name} ({'local' if isinstance(array, S.LocalArray) else 'private'}"
                    f" memory) is indexed by {S.describe_int(i)}, which depends on K")
    return None


_UNCOUNTED = (S.DeclareInt, S.AssignInt, S.While, S.Break, S.Continue)
"""Statements whose trip counts and values this module's argument does not cover."""


def _k_loop_steps(stmts, params):
    """Steps of the loops whose bounds mention K (``None`` for a step not constant)."""
    for s in walk_statements(stmts):
        if isinstance(s, S.For) and any(_mentions(x, "K") for x in (s.start, s.stop)):
            try:
                yield int(eval_static(s.step, params))
            except (TypeError, KeyError):
                yield None


def _mentions(e, name: str) -> bool:
    """Whether the integer expression ``e`` reads the parameter ``name``."""
    return any(isinstance(n, S.Param) and n.name == name for n in walk(e))


def _mentions_k_or_var(e) -> bool:
    """Whether the integer expression ``e`` reads the parameter K or a variable."""
    return any(isinstance(n, S.Param) and n.name == "K" or isinstance(n, S.Var)
               for n in walk(e))


def _has_local_load(e) -> bool:
    """Whether the float expression ``e`` loads local memory."""
    return any(isinstance(n, S.Load) and isinstance(n.array, S.LocalArray) for n in walk(e))


def merges_k_dependent_blocks(schedule: Schedule) -> bool:
    """Whether a loop the engine runs in blocks of iterations loads local memory and may
    run a number of iterations that depends on K (bounds with K or a variable). With a
    device model that merges consecutive local loads into vector loads
    (``local_vector_words`` > 1), its counts depend on how the iterations fall into blocks,
    which differs between a short K (one block) and a long one (several)."""
    def body_loads_local(stmts) -> bool:
        return any(isinstance(s, S.Accumulate) and _has_local_load(s.value)
                   for s in walk_statements(stmts))

    return any(isinstance(s, S.For) and is_vectorizable(s) and body_loads_local(s.body)
               and any(_mentions_k_or_var(x) for x in (s.start, s.stop, s.step))
               for s in walk_statements(schedule.body))


def short_k_values(k: int, depth: int) -> tuple[list[int], int, int] | None:
    """The three K values to simulate instead of ``k``, their spacing P and how many P the
    real K lies beyond the first; ``None`` when ``k`` is too short to gain anything."""
    period = math.lcm(depth, LINE_ELEMS)
    first = k % period
    while first < max(MIN_STEPS * depth, period):
        first += period
    values = [first, first + period, first + 2 * period]
    if values[-1] + period > k:
        return None
    return values, period, (k - first) // period


def with_k(schedule: Schedule, k: int) -> Schedule:
    """``schedule`` with its parameter K set to ``k`` (the rest of the IR unchanged)."""
    params = tuple((name, k if name == "K" else value) for name, value in schedule.params)
    return dataclasses.replace(schedule, params=params)


class NotAffine(NotApplicable):
    """A figure of the three short runs does not have equal differences."""


def extrapolate(values: list, steps: int):
    """The value at ``steps`` periods beyond the first of three values one period apart
    (numbers, numpy arrays of one shape element by element, dicts key by key, ``None``,
    or values that must be equal).

    Raises:
        NotAffine: the three do not have equal differences (or keys, shapes or ``None``s
            differ).
    """
    first, second, third = values
    if isinstance(first, dict):
        if not (list(first) == list(second) == list(third)):
            raise NotAffine("keys differ")
        return {key: extrapolate([first[key], second[key], third[key]], steps)
                for key in first}
    if first is None or second is None or third is None:
        if not (first is None and second is None and third is None):
            raise NotAffine("None in some runs only")
        return None
    if isinstance(first, bool) or not isinstance(first, (int, float)) and \
            not hasattr(first, "dtype"):
        if first == second == third:
            return first
        raise NotAffine(f"{first!r} differs")
    if getattr(first, "ndim", 0):
        if not (first.shape == second.shape == third.shape) or \
                not (second - first == third - second).all():
            raise NotAffine("arrays whose elements do not have equal differences")
        return first + steps * (second - first)
    if second - first != third - second:
        raise NotAffine(f"{first}, {second}, {third}")
    return first + steps * (second - first)


def extrapolate_fields(objs: list, steps: int):
    """A copy of ``objs[0]`` (a dataclass) with every field extrapolated (:func:`extrapolate`)."""
    out = {f.name: extrapolate([getattr(o, f.name) for o in objs], steps)
           for f in dataclasses.fields(objs[0])}
    return dataclasses.replace(objs[0], **out)


def k_extrapolation_problem(schedule: Schedule, local_vector_words: int = 1) -> str | None:
    """Why :func:`applies` does not hold for ``schedule`` (one line, for a note), ``None``
    where it does."""
    if (why := data_decline(schedule.body)) is not None:
        return why
    depth, why = _k_step(schedule)
    if depth is None:
        return why
    if local_vector_words > 1 and merges_k_dependent_blocks(schedule):
        return ("the device model merges local loads in blocks of iterations whose length "
                "depends on K")
    if short_k_values(schedule.param_values["K"], depth) is None:
        return f"K = {schedule.param_values['K']} is too short to gain anything"
    return None


def applies(schedule: Schedule, local_vector_words: int = 1) -> bool:
    """Whether :func:`extrapolated_observation` may try ``schedule`` on a device model with
    ``local_vector_words``: a K loop of a known step depth (:func:`k_step_elems`), not
    merging K-dependent blocks of local loads (:func:`merges_k_dependent_blocks`), and a K
    long enough to gain anything (:func:`short_k_values`); :func:`k_extrapolation_problem`
    says which fails."""
    return k_extrapolation_problem(schedule, local_vector_words) is None


def extrapolated_observation(schedule: Schedule, observe: Callable,
                             local_vector_words: int = 1):
    """The :class:`simulator.model.observation.LaunchObservation` of ``schedule`` from three
    shorter K (see the module docstring).

    ``observe(schedule)`` simulates one schedule by work-group classes;
    ``local_vector_words``: the device model's (see :func:`merges_k_dependent_blocks`).

    Raises:
        NotApplicable: :func:`applies` does not hold, a short run has a hazard, or a figure
            of the three short runs does not have equal differences (:class:`NotAffine`):
            the caller executes the whole K loop.
    """
    if not applies(schedule, local_vector_words):
        raise NotApplicable(f"{schedule.family}: K extrapolation does not apply")
    depth = k_step_elems(schedule)
    values, _, steps = short_k_values(schedule.param_values["K"], depth)
    try:
        runs = [observe(with_k(schedule, k)) for k in values]
    except HazardError as error:
        raise NotApplicable(f"{schedule.family}: a short K has a hazard") from error
    counts = extrapolate_fields([r.counts for r in runs], steps)
    memory = extrapolate_fields([r.memory for r in runs], steps)
    footprint = runs[0].footprint
    for name in ("sectors_by_buffer", "own_sectors_by_buffer"):
        setattr(footprint, name, extrapolate([getattr(r.footprint, name) for r in runs],
                                              steps))
    phases = extrapolate([r.load_phases for r in runs], steps)
    strides = (None if runs[0].strides is None
               else extrapolate_fields([r.strides for r in runs], steps))
    offsets = tuple(extrapolate([r.offsets[d] for r in runs], steps) for d in (0, 1))
    footprint.offsets = offsets[0]
    return dataclasses.replace(runs[0], schedule=schedule, counts=counts, memory=memory,
                               footprint=footprint, load_phases=phases, offsets=offsets,
                               strides=strides)


def extrapolated_counts(schedule: Schedule, count: Callable):
    """The :class:`simulator.observers.counters.TrafficCounts` of ``schedule`` from three
    shorter K, as :func:`extrapolated_observation` gives the observation: every count of
    the three short runs must have equal differences.

    ``count(schedule)`` counts one schedule by work-group classes (its traffic counts);
    it raises :class:`simulator.observers.hazards.HazardError` or
    :class:`simulator.engine.accelerators.NotApplicable` where a short run finds a hazard.

    Raises:
        NotApplicable: :func:`applies` does not hold, a short run has a hazard, or a count
            of the three short runs does not have equal differences (:class:`NotAffine`):
            the caller executes the whole K loop.
    """
    if not applies(schedule):
        raise NotApplicable(f"{schedule.family}: K extrapolation does not apply")
    values, _, steps = short_k_values(schedule.param_values["K"], k_step_elems(schedule))
    try:
        runs = [count(with_k(schedule, k)) for k in values]
    except HazardError as error:
        raise NotApplicable(f"{schedule.family}: a short K has a hazard") from error
    return extrapolate_fields(runs, steps)
