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

The periodicity holds only once every comparison with a value that depends on K has
settled (``k < 3000``, ``k < K - 2000``, ``K > 100`` cross at K of a few thousand): the three
short K values all exceed :func:`k_floor`, the largest magnitude of what such a comparison
reads besides K, and a comparison that multiplies two values depending on K (``k * k <
4 * K``) is refused.

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
    statics: dict[str, int] = {}     # Lets of one static value (get_local_size, ...)
    bound = [s.var if isinstance(s, S.For) else s.name for s in walk_statements(schedule.body)
             if isinstance(s, (S.Let, S.For))]
    for s in walk_statements(schedule.body):
        if isinstance(s, S.Let) and bound.count(s.name) == 1:
            try:
                statics[s.name] = int(eval_static(s.value, params, statics))
            except (TypeError, KeyError):
                pass
    depends = _k_dependents(schedule)
    reads_k = _k_reader(depends)
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


def _k_dependents(schedule: Schedule) -> set[str]:
    """The ``Let`` and loop variables of ``schedule`` whose values depend on K: those that
    read K or such a variable, and the loop variables of loops whose bounds do (to the
    fixed point)."""
    depends: set[str] = set()
    reads_k = _k_reader(depends)
    grown = True
    while grown:
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
    return depends


def _k_reader(depends: set[str]) -> Callable:
    """Whether an integer expression reads K or a variable of ``depends`` (the set is read
    at each call, so it may still grow)."""
    def reads_k(e) -> bool:
        return any(isinstance(n, S.Param) and n.name == "K" or
                   isinstance(n, S.Var) and n.name in depends for n in walk(e))
    return reads_k


def k_floor(schedule: Schedule) -> tuple[int | None, str | None]:
    """``(F, None)``: every short K must exceed F, or ``(None, why)``.

    A comparison whose operands depend on K (a guard ``k < 3000``, a bound ``k < K - 2000``,
    ``K > 100``, a ``min``) crosses at a K of at most the magnitude of its part that does
    not depend on K (:func:`_magnitude`: K and the variables that depend on it taken as 0,
    their ``Let`` values written out): from there on the comparison keeps its pattern from
    one K period to the next, which is what the three short runs measure. F is the largest
    such magnitude over the schedule's comparisons and the bounds of its loops. Refused
    where a comparison multiplies two values that depend on K (``k * k < 4 * K``): it is
    not affine in K."""
    depends = _k_dependents(schedule)
    reads_k, magnitude = _k_reader(depends), _magnitude(schedule, depends)
    floor = 0
    for s in walk_statements(schedule.body):
        compared = [s.start, s.stop] if isinstance(s, S.For) else []
        compared += [S.BinOp("-", n.left, n.right) for n in _own_nodes(s)
                     if isinstance(n, (S.Compare, S.Min))]
        for e in compared:
            if not reads_k(e):
                continue
            far = magnitude(e)
            if far is None:
                return None, (f"a comparison multiplies values that depend on K "
                              f"({S.describe_int(e)}): it is not affine in K")
            floor = max(floor, far)
    return floor, None


def _magnitude(schedule: Schedule, depends: set[str]) -> Callable:
    """A function giving an upper bound of ``|e|`` for an integer expression ``e`` of
    ``schedule``, with K and the variables of ``depends`` taken as 0 (a ``Let`` by its
    value; a work-item id by its NDRange extent; another variable by its loop's bounds or
    the launch's largest extent); ``None`` where ``e`` multiplies two values that depend on
    K."""
    params, reads_k = schedule.param_values, _k_reader(depends)
    extent = max([*schedule.global_size, *(v for k, v in params.items()
                                           if k != "K" and isinstance(v, int))], default=1)
    definitions = _definitions(schedule)

    def mag(x, seen=()):
        if isinstance(x, S.Const):
            return abs(int(x.value))
        if isinstance(x, S.Param):
            return 0 if x.name == "K" else abs(int(params.get(x.name, extent)))
        if isinstance(x, S.WorkItemId):
            sizes = {"local": schedule.local_size, "group": schedule.num_groups,
                     "global": schedule.global_size}[x.kind]
            return sizes[x.dim] if x.dim < len(sizes) else 1
        if isinstance(x, S.Var):
            if x.name in seen:
                return extent
            defined = definitions.get(x.name)
            if defined is None:
                return 0 if x.name in depends else extent
            parts = [mag(d, (*seen, x.name)) for d in defined]
            return None if None in parts else max(parts)
        if isinstance(x, S.BinOp):
            if x.op == "*" and reads_k(x.left) and reads_k(x.right):
                return None
            left, right = mag(x.left, seen), mag(x.right, seen)
            if left is None or right is None:
                return None
            if x.op == "*":
                return left * right
            if x.op == "/":   # by a divisor of constants and sizes: that much less
                try:
                    divisor = 1 if reads_k(x.right) else abs(int(eval_static(x.right,
                                                                             params)))
                except (TypeError, KeyError, ValueError, ZeroDivisionError):
                    divisor = 1
                return -(-left // max(divisor, 1))
            if x.op == "%":
                return min(left, right)
            if x.op == "<<" and isinstance(x.right, S.Const):
                return left << int(x.right.value)
            return left + right
        if isinstance(x, (S.Min, S.IntSelect)):
            parts = [mag(y, seen) for y in ((x.left, x.right) if isinstance(x, S.Min)
                                            else (x.then, x.orelse))]
            return None if None in parts else max(parts)
        if isinstance(x, S.Wrap):
            return mag(x.operand, seen)
        return extent

    return mag


def _definitions(schedule: Schedule) -> dict[str, list]:
    """What each ``Let`` variable (its value) and each loop variable of a loop whose bounds
    do not read K (its start and stop) is defined by, by name."""
    found: dict[str, list] = {}
    for s in walk_statements(schedule.body):
        if isinstance(s, S.Let):
            found.setdefault(s.name, []).append(s.value)
        elif isinstance(s, S.For) and not any(_mentions(x, "K") for x in (s.start, s.stop)):
            found.setdefault(s.var, []).extend([s.start, s.stop])
    return found


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


def short_k_values(k: int, depth: int, floor: int = 0) -> tuple[list[int], int, int] | None:
    """The three K values to simulate instead of ``k``, each above ``floor``
    (:func:`k_floor`), their spacing P and how many P the real K lies beyond the first;
    ``None`` when ``k`` is too short to gain anything."""
    period = math.lcm(depth, LINE_ELEMS)
    first = k % period
    while first < max(MIN_STEPS * depth, period, floor + 1):
        first += period
    values = [first, first + period, first + 2 * period]
    if values[-1] + period > k:
        return None
    return values, period, (k - first) // period


def schedule_short_k_values(schedule: Schedule) -> tuple[list[int], int, int] | None:
    """:func:`short_k_values` of ``schedule``: its K, its step depth (:func:`k_step_elems`)
    and its floor (:func:`k_floor`); ``None`` where either is not known or K is too
    short."""
    depth, (floor, _) = k_step_elems(schedule), k_floor(schedule)
    if depth is None or floor is None:
        return None
    return short_k_values(schedule.param_values["K"], depth, floor)


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
    floor, why = k_floor(schedule)
    if floor is None:
        return why
    if short_k_values(schedule.param_values["K"], depth, floor) is None:
        return (f"K = {schedule.param_values['K']} is too short to gain anything" +
                (f" (the short K must exceed {floor}, where a comparison with K settles)"
                 if floor else ""))
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
    values, _, steps = schedule_short_k_values(schedule)
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
    values, _, steps = schedule_short_k_values(schedule)
    try:
        runs = [count(with_k(schedule, k)) for k in values]
    except HazardError as error:
        raise NotApplicable(f"{schedule.family}: a short K has a hazard") from error
    return extrapolate_fields(runs, steps)
