"""Vectorized execution of a schedule on numpy arrays.

Execution model (OpenCL 1.2 §3.2): the NDRange is cut into work-groups; the engine executes a
*batch* of work-groups at once, every work-item of the batch advancing together from barrier
to barrier. Every per-work-item quantity is a numpy array of shape ``(G, L, I)``: G
work-groups of the batch, L work-items per work-group (local ids flattened with dimension 0
fastest), I iterations of a vectorized loop block (1 elsewhere). There is no Python loop over
work-items and no thread per work-item: execution is deterministic.

Divergence is handled with masks: ``If`` narrows the mask, ``Return`` clears a work-item's
*alive* bit, loops run while any work-item of the batch still iterates. A barrier checks
that in each work-group either every work-item or none arrives (otherwise: barrier
divergence, naming the barrier by its place in the source, ``Barrier.source``, or else by
its position among the schedule's barriers). Loops whose body only reads memory and
accumulates into private variables (no store, barrier or return) are executed in blocks of
iterations along the third axis.

Vector accesses (``float2``/``float4``) are one instruction per work-item: their event
lists every element touched (``AccessEvent.vector_width`` entries per iteration), and a first
element whose flat index is not a multiple of the width is the hazard
``misaligned-vector-access``. Private arrays (register tiles) are kept per work-item as
``(G, L, size)`` arrays; their indices are bounds-checked like any array's.

An integer ``/`` or ``%`` whose divisor is 0 for a work-item that executes it (its mask on
for the statement, and C evaluating the operand: the right one of ``&&`` and ``||`` only
where the left one does not decide) is the hazard ``integer-division-by-zero``, undefined in
C; masked-off work-items dividing by zero (``if (d != 0) x / d``) are none. Each statement
execution reports an expression once; the bounds and step of a loop count once per entry.

Control flow depends on integers only, never on float values, so running with
``compute_values=False`` gives exactly the same counts while skipping the float arithmetic.
Then the accelerators the caller enables (:class:`simulator.engine.accelerators.Accelerators`) may
run: work-group classes choose the work-groups executed; the statement passes
(:class:`simulator.engine.accelerators.Pass`: private nests, loop blocks) execute loops and runs of
statements in fewer steps with the same effect.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine import sum_length
from tiletraffic.simulator.engine.accelerators import (SIMULATE, Accelerators, NotApplicable,
                                                       Pass, Run)
from tiletraffic.simulator.engine.accelerators import loop_blocks
from tiletraffic.simulator.engine.accelerators.classes import group_classes
from tiletraffic.simulator.engine.accelerators.class_safety import classes_problem
from tiletraffic.simulator.engine.accelerators.loop_blocks import STALE, LoopBlocks
from tiletraffic.simulator.engine.accelerators.private_nest import PrivateNests
from tiletraffic.simulator.observers.counters import (AccessEvent, Observer, TrafficCounter,
                                                      TrafficCounts, count_per_group)
from tiletraffic.simulator.engine.limits import (GENERIC_GPU, DeviceLimits,
                                                 check_schedule_limits)
from tiletraffic.simulator.observers.global_races import GlobalRaceDetector
from tiletraffic.simulator.observers.hazards import (Hazard, HazardError, HazardLog,
                                                     array_dims, element_text)
from tiletraffic.simulator.observers.local_races import (LocalRaceDetector,
                                                         UninitializedLocalRead,
                                                         UninitializedOutputRead,
                                                         UnwrittenOutput)
from tiletraffic.simulator.ir.static import (CMP_OPS, ExecutionError, apply_int_op, divide,
                                             eval_static, is_vectorizable, wrap_int)
from tiletraffic.simulator.engine.unwritten import unwritten_fill

BATCH_WORK_ITEMS = 1 << 20
"""Work-items executed together (one batch of work-groups), bounding peak memory."""

BLOCK_ELEMS = 1 << 22
"""Entries of one (G, L, I) block of a vectorized loop."""


VECTOR_BLOCK = 4
"""Vectorized loop blocks start at multiples of this many iterations."""

PLAN_CACHE_ENTRIES = 4096
"""Static plans (private nests, statement runs, blocked loops) kept across machines."""
_PLANS: dict[tuple, tuple] = {}


LOOP_TRIPS_LIMIT = 2**24
"""Most iterations one loop may run in the simulator (far above the K of any launch the
commands accept: :data:`analysis.cli.common.GROUP_WORK_LIMIT` bounds work-items x K)."""


class InputError(ValueError):
    """Inputs missing, of the wrong shape or not finite-dtype float arrays."""


@dataclass
class SimulationResult:
    """What one simulated launch produced.

    Attributes:
        schedule: the schedule executed.
        outputs: output arrays (roles ``out`` and ``inout``) in their logical shapes (e.g. C
            as M×N), float32; elements of an ``out`` array the kernel never wrote hold the
            NaN :data:`simulator.engine.unwritten.UNWRITTEN_BITS`. Empty when values were not
            computed.
        counts: exact traffic counts.
        global_loads_per_group: global loads of each work-group, by linear work-group id
            (dimension 0 fastest), shape ``(work_groups,)``.
        read_maps: for each requested global input, how many times each element was read,
            in the input's logical shape.
        hazards: hazards collected in ``"report"`` mode.
        sum_lengths: with ``sum_lengths=True``, each output's sum length per element
            (:mod:`simulator.engine.sum_length`: the float32 roundings its value went through, the
            K of its tolerance), int32 in the output's logical shape (0 where unwritten).
        representatives: with ``work_group_classes``, the linear ids of the work-groups
            executed (one per class); ``None`` when every work-group ran.
    """

    schedule: S.Schedule
    outputs: dict[str, np.ndarray]
    counts: TrafficCounts
    global_loads_per_group: np.ndarray
    read_maps: dict[str, np.ndarray]
    hazards: list[Hazard]
    sum_lengths: dict[str, np.ndarray] | None = None
    representatives: np.ndarray | None = None


def simulate(schedule: S.Schedule, inputs: dict[str, np.ndarray] | None = None, *,
             compute_values: bool = True, read_maps: Iterable[str] = (),
             limits: DeviceLimits | None = GENERIC_GPU, hazards: str = "raise",
             observers: Iterable[Observer] = (), race_checks: bool = True,
             accelerators: Accelerators = SIMULATE,
             batch_work_items: int = BATCH_WORK_ITEMS,
             sum_lengths: bool = False,
             input_sum_lengths: dict[str, int] | None = None) -> SimulationResult:
    """Execute ``schedule`` and count its traffic.

    Args:
        schedule: the schedule to execute.
        inputs: the global inputs by name in their logical shapes (A as M×K row-major, ...),
            converted to float32. Required when ``compute_values`` is true.
        compute_values: compute the outputs; ``False`` counts only (same counts, faster).
        read_maps: names of global inputs for which to return per-element read counts.
        limits: device limits to enforce before executing (``None``: none).
        hazards: ``"raise"`` (default: the first hazard raises) or ``"report"`` (collect
            them all in ``SimulationResult.hazards``; offending accesses are skipped).
        observers: extra observers of the access stream.
        accelerators: the exact shortcuts that may run
            (:class:`simulator.engine.accelerators.Accelerators`; default: private nests only).
            ``work_group_classes`` executes one work-group per class of identical traffic
            (:mod:`simulator.engine.accelerators.classes`) and weights its counts by the class
            size: exact counts of large launches in seconds. It needs
            ``compute_values=False``. A schedule whose classes are not proved
            (:func:`simulator.engine.accelerators.class_safety.classes_problem`: masks or indices
            that depend on the work-group id other than at the NDRange's edges) runs every
            work-group instead (``SimulationResult.representatives`` is then ``None``).
            Hazards are checked in the representatives only,
            and races in global memory, reads of outputs before anything stored them and
            unwritten outputs, which need every work-group of the launch, are not checked
            at all. ``loop_blocks`` (with
            ``work_group_classes``) also runs loops that store or assign private arrays in
            blocks of iterations where :mod:`simulator.engine.accelerators.loop_blocks` allows it:
            the same counts, but a hazard's example could differ, so a hazard in a launch
            in which a loop ran blocked (in either ``hazards`` mode), or a later read of
            such a loop's ``Let``, raises
            :class:`simulator.engine.accelerators.NotApplicable` (run again without it:
            :func:`simulator.model.observation.observe_launch` does).
        race_checks: run the observers that find races in local memory and in global memory
            (:mod:`simulator.observers.global_races`: between work-groups, and within a work-group
            where no global-fence barrier orders the accesses), reads of unwritten local
            memory, reads of output elements before anything stored them and output
            elements never written (out-of-bounds accesses, barrier
            divergence, uninitialized private reads and integer divisions by zero are
            always checked).
        batch_work_items: work-items per batch of work-groups (memory bound).
        sum_lengths: also count each output element's sum length
            (:attr:`SimulationResult.sum_lengths`); needs ``compute_values``.
        input_sum_lengths: with ``sum_lengths``, the sum length every element of the named
            inputs starts with (an earlier kernel's largest, for a buffer it wrote:
            :mod:`simulator.ir.sequence`); other inputs start exact (0).

    Raises:
        InputError: missing input or wrong shape, or work-group classes asked for with
            values or read maps.
        simulator.engine.limits.LimitError: the schedule exceeds ``limits``.
        simulator.observers.hazards.HazardError: a hazard, in ``"raise"`` mode.
        simulator.engine.accelerators.NotApplicable: with ``accelerators.loop_blocks``, where
            the blocked run cannot give full execution's result (see above).
    """
    if limits is not None:
        check_schedule_limits(schedule, limits)
    params = schedule.param_values
    sizes = {a.name: int(eval_static(a.size, params)) for a in schedule.arrays}
    buffers: dict[str, np.ndarray] = {}
    if compute_values:
        buffers = _prepare_buffers(schedule, inputs, sizes, params)
    for name in read_maps:
        if not schedule.array(name).is_input:
            raise InputError(f"read map requested for {name!r}, which is not an input")
    counter = TrafficCounter(schedule.work_groups, [a.name for a in schedule.arrays],
                             {n: sizes[n] for n in read_maps})
    log = HazardLog(hazards, num_groups=schedule.num_groups)
    by_classes = accelerators.work_group_classes
    if by_classes and (compute_values or read_maps):
        raise InputError("work-group classes give counts only: use compute_values=False "
                         "and no read maps")
    if by_classes and classes_problem(schedule) is not None:
        by_classes = False   # not proved for this schedule: every work-group runs
        accelerators = accelerators.replace(work_group_classes=False)
    all_observers: list[Observer] = [counter]
    if race_checks:
        all_observers += _hazard_observers(schedule, log, sizes, params,
                                           full_launch=not by_classes)
    all_observers += list(observers)
    if sum_lengths and not compute_values:
        raise InputError("sum lengths are counted with the values: use compute_values=True")
    machine = Machine(schedule, params, sizes, buffers, all_observers, log, compute_values,
                      accelerators)
    if sum_lengths:
        machine.track_sum_lengths(input_sum_lengths)
    per_batch = max(1, batch_work_items // schedule.work_group_items)
    representatives = None
    try:
        if by_classes:
            classes = group_classes(schedule, probe_runner(schedule, accelerators))
            reps, weights = classes.representatives, classes.weights
            representatives = np.asarray(reps)
            for first in range(0, len(reps), per_batch):
                machine.run_batch(reps[first:first + per_batch],
                                  weights[first:first + per_batch])
        else:
            for first in range(0, schedule.work_groups, per_batch):
                machine.run_batch(np.arange(first, min(first + per_batch,
                                                       schedule.work_groups)))
    except HazardError as error:
        if machine.ran_blocked:
            raise NotApplicable(f"{schedule.family}: a hazard in a launch with loops run in "
                                "blocks of iterations (its example could differ)") from error
        raise
    for obs in all_observers:
        obs.on_finish()
    if machine.ran_blocked and log.hazards:   # "report" mode: the same as "raise"
        raise NotApplicable(f"{schedule.family}: hazards in a launch with loops run in blocks "
                            "of iterations (their examples could differ)")
    outputs = {}
    if compute_values:
        for a in schedule.arrays:
            if a.is_output:
                outputs[a.name] = buffers[a.name].reshape([params[s] for s in a.shape])
    maps = {n: counter.read_maps[n].reshape([params[s] for s in schedule.array(n).shape])
            for n in read_maps}
    lengths = None
    if sum_lengths:
        lengths = {a.name: np.maximum(machine.dbuf[a.name], 0).reshape(
            [params[d] for d in a.shape]) for a in schedule.arrays if a.is_output}
    return SimulationResult(schedule, outputs, counter.finish(),
                            counter.global_loads_per_group, maps, log.hazards, lengths,
                            representatives)


def probe_runner(schedule: S.Schedule, accelerators: Accelerators = SIMULATE):
    """``run(linear_ids, observer, block_groups=None)``: execute those work-groups of
    ``schedule`` (counts only, hazards collected and ignored) with one observer; for probing
    address patterns. ``block_groups``: vectorized loops run in the iteration blocks of a
    batch of that many work-groups (default: the batch's own). ``accelerators``: as for
    :func:`simulate`, values off (with ``loop_blocks``, each statement's event covers a
    block of iterations: the same index differences where they are one constant per
    statement, else none)."""
    params = schedule.param_values
    sizes = {a.name: int(eval_static(a.size, params)) for a in schedule.arrays}

    def run_groups(linear_ids, observer, block_groups=None):
        probe = Machine(schedule, params, sizes, {}, [observer], HazardLog("report"), False,
                        accelerators)
        probe.block_groups = block_groups
        probe.run_batch(np.asarray(linear_ids))

    return run_groups


def sum_lengths_of_groups(schedule: S.Schedule, linear_ids,
                          input_sum_lengths: dict[str, int] | None = None
                          ) -> dict[str, np.ndarray]:
    """Sum lengths (:mod:`simulator.engine.sum_length`) of the output elements that the work-groups
    ``linear_ids`` (linear ids, dimension 0 fastest) store, executing only those, with values
    (zero inputs: sum lengths do not depend on values). Per output: flat int32 array, 0 where
    those work-groups store nothing. Hazards are ignored (check them first).
    ``input_sum_lengths``: as for :func:`simulate`."""
    params = schedule.param_values
    sizes = {a.name: int(eval_static(a.size, params)) for a in schedule.arrays}
    buffers = {a.name: np.zeros(sizes[a.name], np.float32) for a in schedule.arrays}
    machine = Machine(schedule, params, sizes, buffers, [], HazardLog("report"), True)
    machine.track_sum_lengths(input_sum_lengths)
    ids = np.asarray(linear_ids, dtype=np.int64)
    per_batch = max(1, BATCH_WORK_ITEMS // schedule.work_group_items)
    for first in range(0, len(ids), per_batch):
        machine.run_batch(ids[first:first + per_batch])
    return {a.name: np.maximum(machine.dbuf[a.name], 0)
            for a in schedule.arrays if a.is_output}


def group_id_of(schedule: S.Schedule, linear: int) -> tuple[int, ...]:
    """Work-group id per NDRange dimension of linear work-group ``linear`` (dim 0 fastest)."""
    out = []
    for n in schedule.num_groups:
        out.append(linear % n)
        linear //= n
    return tuple(out)


def _hazard_observers(schedule, log, sizes, params, full_launch=True) -> list[Observer]:
    def gid(linear: int) -> tuple[int, ...]:
        return group_id_of(schedule, linear)

    local_sizes = {a.name: a.size for a in schedule.local_arrays}
    outs = [a for a in schedule.arrays if a.role == "out"]  # inout keeps its input
    found: list[Observer] = [LocalRaceDetector(schedule, log, gid, local_sizes),
                             UninitializedLocalRead(schedule, log, gid, local_sizes)]
    if full_launch:
        found.append(GlobalRaceDetector(schedule, log, sizes))
        found.append(UninitializedOutputRead(schedule, log, gid,
                                             {a.name: sizes[a.name] for a in outs}))
        found.append(UnwrittenOutput(schedule, log, {a.name: sizes[a.name] for a in outs},
                                     {a.name: tuple(params[d] for d in a.shape) for a in outs}))
    return found


def _prepare_buffers(schedule, inputs, sizes, params) -> dict[str, np.ndarray]:
    inputs = inputs or {}
    buffers = {}
    for a in schedule.arrays:
        shape = tuple(params[s] for s in a.shape)
        if a.role == "out":
            buffers[a.name] = unwritten_fill(sizes[a.name])
            continue
        if a.name not in inputs:
            raise InputError(f"{schedule.family} needs input {a.name!r} of shape {shape}")
        arr = np.asarray(inputs[a.name])
        if arr.shape != shape:
            raise InputError(f"input {a.name!r} has shape {arr.shape}, expected {shape} "
                             f"({' x '.join(a.shape)})")
        buffers[a.name] = (np.array(arr, dtype=np.float32).reshape(-1) if a.is_output else
                           np.ascontiguousarray(arr, dtype=np.float32).reshape(-1))
    return buffers


_FLOAT_OPS = {"+": np.add, "-": np.subtract, "*": np.multiply}
"""numpy spelling of :data:`simulator.ir.nodes.FLOAT_OPS`."""
_FLOAT_FUNCTIONS = {"fmax": np.fmax, "fmin": np.fmin, "fabs": np.abs, "sqrt": np.sqrt,
                    "exp": np.exp}
"""numpy spelling of :data:`simulator.ir.nodes.FLOAT_FUNCTIONS` (float32 in, float32 out;
fmax/fmin ignore a NaN operand as OpenCL's do)."""


def _as3(a) -> np.ndarray:
    a = np.asarray(a)
    return a.reshape((1,) * (3 - a.ndim) + a.shape)


def _expand_vector(flat, mask, shape, width: int):
    """Index, mask and shape of a vector access with its ``width`` elements laid out along
    the iteration axis: entry ``i * width + w`` is element ``w`` of iteration ``i``."""
    G, L, I = shape
    f3, m3 = _as3(flat), _as3(mask)
    f3 = np.broadcast_to(f3, f3.shape[:2] + (I,))
    m3 = np.broadcast_to(m3, m3.shape[:2] + (I,))
    index = (f3[..., None] + np.arange(width)).reshape(f3.shape[:2] + (I * width,))
    return index, np.repeat(m3, width, axis=2), (G, L, I * width)


class Machine:
    """Executes the body of one schedule for batches of work-groups."""

    @property
    def block_elems(self) -> int:
        """Entries of one block of a vectorized loop (:data:`BLOCK_ELEMS`)."""
        return BLOCK_ELEMS

    def __init__(self, schedule, params, sizes, buffers, observers, log, compute_values,
                 accelerators: Accelerators = SIMULATE):
        self.schedule = schedule
        self.params = params
        self.sizes = sizes
        self.buffers = buffers
        self.observers = observers
        self.log = log
        self.values = compute_values
        self.vectorizable: dict[int, bool] = {}
        self.sites: dict[tuple, str] = {}
        self.barriers: dict[int, int] = {}
        self.block_groups: int | None = None
        """Work-groups whose batch sets the blocks of vectorized loops (None: the batch)."""
        self.params_key = tuple(sorted(params.items()))
        fast = not compute_values and accelerators.private_nests
        self.static_private_elements = fast
        """Private array elements of one static index are read and assigned without
        per-work-item index arrays (part of the private nests accelerator)."""
        self.passes: tuple[Pass, ...] = ((PrivateNests(),) if fast else ()) + (
            (LoopBlocks(),) if fast and accelerators.loop_blocks
            and accelerators.work_group_classes else ())
        """The statement passes that may run, in the order they are asked."""
        self.blocked = False
        """Inside a loop run blocked by :mod:`simulator.engine.accelerators.loop_blocks`."""
        self.ran_blocked = False
        """Whether a loop ran blocked in this machine."""
        self.depths = False
        """Track sum lengths (:mod:`simulator.engine.sum_length`) beside the values."""
        self.live = None
        """The work-items that execute the expressions being evaluated (the statement's
        mask; narrowed for the right operand of ``&&`` and ``||``, which C evaluates only
        where the left one does not decide; ``False`` where an expression evaluated again
        was checked already): an unsigned 64-bit :class:`Wrap` refuses a negative value of
        these only, and an integer division by zero of these only is a hazard."""
        self.live_checks = _has_live_check(schedule.body, params)
        """Whether an expression of the schedule is checked per executing work-item (an
        unsigned 64-bit ``Wrap``, a ``/`` or ``%`` whose divisor is not a non-zero
        constant): then ``&&`` and ``||`` narrow :attr:`live`, and a ``select``'s condition
        is evaluated without values too."""
        self.divided: set[int] = set()
        """The divisions by zero reported in the statement executing now (by ``id`` of the
        ``BinOp``): an expression the engine evaluates again for the same statement (a
        private index, a loop's step) is reported once."""

    def track_sum_lengths(self, initial: dict[str, int] | None = None) -> None:
        """Count sum lengths from now on: per global array a shadow of int32 (inputs 0, or
        ``initial[name]``), kept across batches; per batch shadows of privates and local
        memory."""
        self.depths = True
        initial = initial or {}
        self.seeded = {name for name, length in initial.items() if length}
        self.dbuf = {a.name: np.full(self.sizes[a.name], initial.get(a.name, 0),
                                     sum_length.DTYPE)
                     for a in self.schedule.arrays}
        self.last_index: dict[int, tuple] = {}

    # ------------------------------------------------------------------ batch set-up
    def run_batch(self, group_index: np.ndarray, weights: np.ndarray | None = None) -> None:
        sch = self.schedule
        self.group_index = group_index
        G, L = len(group_index), sch.work_group_items
        self.G, self.L = G, L
        ngroups, lsize = sch.num_groups, sch.local_size
        flat_local = np.arange(L, dtype=np.int64)
        self.ids: dict[tuple[str, int], np.ndarray] = {}
        rest_g, rest_l = group_index.astype(np.int64), flat_local
        for d, (ng, ls) in enumerate(zip(ngroups, lsize)):
            g, rest_g = rest_g % ng, rest_g // ng
            lo, rest_l = rest_l % ls, rest_l // ls
            self.ids[("group", d)] = g.reshape(G, 1, 1)
            self.ids[("local", d)] = lo.reshape(1, L, 1)
            self.ids[("global", d)] = g.reshape(G, 1, 1) * ls + lo.reshape(1, L, 1)
        for obs in self.observers:
            obs.on_batch(group_index, L, weights)
        self.env: dict[str, object] = {}
        self.privates: dict[str, np.ndarray] = {}
        self.parrays: dict[str, tuple] = {}
        self.parray_set: dict[str, np.ndarray | None] = {}
        self.private_set: dict[str, np.ndarray] = {}
        self.private_full: dict[str, bool] = {}
        self.local = {a.name: np.full((G, a.size), np.nan, dtype=np.float32)
                      for a in sch.local_arrays} if self.values else {}
        self.alive = np.ones((G, L, 1), dtype=bool)
        self.epoch = 0
        if self.depths:
            self.dpriv: dict[str, np.ndarray] = {}
            self.dparr: dict[str, np.ndarray] = {}
            self.dlocal = {a.name: np.zeros((G, a.size), sum_length.DTYPE)
                           for a in sch.local_arrays}
        self.exec_block(sch.body, np.ones((G, L, 1), dtype=bool))

    # ------------------------------------------------------------------ integers
    def eval_int(self, e: S.IntExpr):
        if isinstance(e, S.Const):
            return e.value
        if isinstance(e, S.Param):
            return self.params[e.name]
        if isinstance(e, S.Var):
            try:
                value = self.env[e.name]
            except KeyError:
                raise NameError(f"{self.schedule.family}: integer {e.name!r} used before it "
                                "is defined") from None
            if value is STALE:
                raise NotApplicable(
                    f"{self.schedule.family}: {e.name!r} read after the blocked loop that "
                    "defines it")
            return value
        if isinstance(e, S.WorkItemId):
            return self.ids[(e.kind, e.dim)]
        if isinstance(e, S.BinOp):
            left, right = self.eval_int(e.left), self.eval_int(e.right)
            if e.op in ("/", "%"):
                return self.divide(e, left, right)
            return apply_int_op(e, left, right)
        if isinstance(e, S.Min):
            return np.minimum(self.eval_int(e.left), self.eval_int(e.right))
        if isinstance(e, S.Wrap):
            value = self.eval_int(e.operand)
            if e.bits < 64:
                return wrap_int(value, e.bits, e.signed)
            if not e.signed:
                self.check_unsigned(e, value)
            return value
        raise TypeError(f"unknown integer expression {e!r}")

    def divide(self, e: S.BinOp, left, right):
        """``left / right`` or ``left % right`` (C's; ``e`` the expression): where the
        divisor is 0 for a work-item of :attr:`live`, the hazard
        ``integer-division-by-zero`` (C leaves the result undefined: a device gives any value
        or traps), with the expression, an example work-item and the count; the value is
        then 0 for those work-items (:func:`simulator.ir.static.divide`), and what the
        kernel computes from it is not what a device computes."""
        if isinstance(right, (int, np.integer)) and right != 0:
            return apply_int_op(e, left, right)
        zero = np.equal(right, 0)
        if np.any(zero) and id(e) not in self.divided:
            bad = np.logical_and(zero, True if self.live is None else self.live)
            if np.any(bad):
                self.divided.add(id(e))
                self.report_division_by_zero(e, left, bad)
        return divide(e.op, left, right)

    def first_work_item(self, bad, value):
        """The first true entry of ``bad`` (a mask broadcastable to the batch's ``(G, L,
        I)``) as ``(g, li, shape, value there, global id, local id, work-group id)``, for
        the example of a message."""
        shape = self.shape_of(bad, value)
        g, li, it = (int(v[0]) for v in np.nonzero(np.broadcast_to(bad, shape)))
        dims = range(len(self.schedule.local_size))
        gid = tuple(int(self.ids[("global", d)][g, li, 0]) for d in dims)
        lid = tuple(int(self.ids[("local", d)][0, li, 0]) for d in dims)
        return (g, li, shape, int(np.broadcast_to(value, shape)[g, li, it]), gid, lid,
                self.group_id_tuple(g))

    def report_division_by_zero(self, e: S.BinOp, left, bad) -> None:
        g, li, shape, dividend, gid, lid, group = self.first_work_item(bad, left)
        bad_b = np.broadcast_to(bad, shape)
        what = "division" if e.op == "/" else "remainder"
        text = e.source or S.describe_int(e)[1:-1]
        groups = self.per_group(bad_b, shape)
        self.log.add(Hazard(
            kind="integer-division-by-zero", schedule=self.schedule.family, array="",
            index=-1, group_id=group, local_ids=(li,), epoch=self.epoch,
            count=int(groups[1].sum()), site=f"{what} {text}",
            detail=(f"{text} is {dividend} {e.op} 0 for the work-item of global id {gid} "
                    f"(local id {lid} of work-group {group}): an integer {what} by zero, "
                    "which C leaves undefined (a device gives any value or traps); the "
                    "simulator goes on with 0")),
            groups, f"{what}s by zero")

    def check_unsigned(self, e: S.Wrap, value) -> None:
        """Refuse a negative ``value`` of the unsigned 64-bit ``e`` for a work-item of
        :attr:`live`: C's value, ``value + 2**64``, is beyond int64.

        Raises:
            ExecutionError: naming the expression, the work-item and the value.
        """
        negative = np.less(value, 0)
        if not np.any(negative):
            return
        live = True if self.live is None else self.live
        bad = np.logical_and(negative, live)
        if not np.any(bad):
            return
        _, _, _, v, gid, lid, group = self.first_work_item(bad, value)
        what = e.source or f"{self.schedule.family}: {S.describe_int(e.operand)}"
        raise ExecutionError(
            f"{what} is {v} for the work-item of global id {gid} (local id {lid} of "
            f"work-group {group}), and C computes it as an unsigned 64-bit "
            f"integer, {v + 2 ** 64}, which the simulator's 64-bit signed integers do not "
            "hold (a limit of the simulator, not a fault of the kernel): compute it in int "
            "or uint (whose wrap-around the simulator models), or only where it is 0 or more")

    def eval_cond(self, c: S.Cond):
        if isinstance(c, S.Compare):
            return CMP_OPS[c.op](self.eval_int(c.left), self.eval_int(c.right))
        if isinstance(c, S.BoolOp):
            left = self.eval_cond(c.left)
            if not self.live_checks:
                right = self.eval_cond(c.right)
            else:       # C evaluates the right operand where the left one does not decide
                live = True if self.live is None else self.live
                self.live = np.logical_and(live, left if c.op == "&&" else
                                           np.logical_not(left))
                try:
                    right = self.eval_cond(c.right)
                finally:
                    self.live = None if live is True else live
            return np.logical_and(left, right) if c.op == "&&" else np.logical_or(left, right)
        if isinstance(c, S.Not):
            return np.logical_not(self.eval_cond(c.operand))
        raise TypeError(f"unknown condition {c!r}")

    # ------------------------------------------------------------------ memory
    def shape_of(self, *arrays) -> tuple[int, int, int]:
        shape = np.broadcast_shapes(*(np.shape(a) for a in arrays), (self.G, self.L, 1))
        return (self.G, self.L, shape[2])

    def dims_of(self, array) -> tuple[int, ...]:
        if isinstance(array, S.GlobalArray):
            return tuple(self.params[d] for d in array.shape)
        return tuple(d.value for d in array.dims)

    def site(self, direction: str, array, index: tuple) -> str:
        """``"store x_local[lid]"``: the statement's identity in hazards (cached)."""
        key = (direction, id(array), id(index))
        text = self.sites.get(key)
        if text is None:
            text = self.sites[key] = f"{direction} {S.describe_access(array, index)}"
        return text

    def access(self, space: str, direction: str, array, index: tuple, mask, width: int = 1):
        """Bounds-check (per dimension) and announce one access.

        ``width`` > 1: a vector access of ``width`` consecutive elements along the last
        dimension (all of them bounds-checked); its first flat index must be a multiple of
        ``width`` (else a ``misaligned-vector-access`` hazard, the entry skipped). The event
        then covers every element: its iteration axis holds ``width`` entries per
        iteration (``AccessEvent.vector_width``).

        Returns the row-major flat index (of the first element) and the mask with
        out-of-bounds and misaligned entries off.
        """
        site = self.site(direction, array, index)
        dims = self.dims_of(array)
        comps = [np.asarray(self.eval_int(i), dtype=np.int64) for i in index]
        last = len(dims) - 1
        refused = None   # entries skipped as hazards, for on_hazardous_store
        for d, (comp, extent) in enumerate(zip(comps, dims)):
            top = comp + (width - 1) if d == last and width > 1 else comp
            if comp.size and (comp.min() < 0 or top.max() >= extent):
                bad = np.logical_and(mask, (comp < 0) | (top >= extent))
                if bad.any():
                    self.report_out_of_bounds(space, direction, array.name, dims, d,
                                              comps[:d] + [top] + comps[d + 1:], bad, site)
                    mask = np.logical_and(mask, np.logical_not(bad))
                    refused = bad if refused is None else refused | bad
        flat = comps[0]
        for comp, extent in zip(comps[1:], dims[1:]):
            flat = flat * extent + comp
        size = math.prod(dims)
        if width > 1:
            misaligned = np.logical_and(mask, flat % width != 0)
            if misaligned.any():
                self.report_misaligned(space, direction, array.name, width, flat, misaligned,
                                       site)
                mask = np.logical_and(mask, np.logical_not(misaligned))
                refused = misaligned if refused is None else refused | misaligned
        if refused is not None and space == "global" and direction == "store":
            shape = self.shape_of(flat, refused)
            words = np.broadcast_to(flat, shape)[np.broadcast_to(refused, shape)]
            words = (words[:, None] + np.arange(width)).reshape(-1)
            words = words[(words >= 0) & (words < size)]
            for obs in self.observers:
                obs.on_hazardous_store(array.name, words)
        shape = self.shape_of(flat, mask)
        ev_index, ev_mask, ev_shape = flat, mask, shape
        if width > 1:
            ev_index, ev_mask, ev_shape = _expand_vector(flat, mask, shape, width)
        event = AccessEvent(space, direction, array.name, size, ev_index, ev_mask, ev_shape,
                            self.group_index, site, vector_width=width,
                            merge_iterations=not self.blocked)
        for obs in self.observers:
            obs.on_access(event)
        return flat, mask

    def report_misaligned(self, space, direction, name, width, flat, bad, site):
        shape = self.shape_of(bad, flat)
        g, li, it = (int(v[0]) for v in np.nonzero(np.broadcast_to(bad, shape)))
        where = int(np.broadcast_to(flat, shape)[g, li, it])
        groups = self.per_group(bad, shape)
        gid = self.group_id_tuple(g)
        element = element_text(name, where, array_dims(self.schedule, name))
        self.log.add(Hazard(
            kind="misaligned-vector-access", schedule=self.schedule.family, array=name,
            index=where, group_id=gid, local_ids=(li,), epoch=self.epoch,
            count=int(groups[1].sum()), site=f"{space} {site}",
            detail=(f"{space} float{width} {direction} of {name} at {element} (byte "
                    f"offset {where * S.FLOAT_BYTES}, not a multiple of "
                    f"{width * S.FLOAT_BYTES}) ({site}), e.g. by work-item {li} of work-group "
                    f"{gid}")), groups, "misaligned vector accesses")

    def per_group(self, mask, shape) -> tuple[np.ndarray, np.ndarray]:
        """(linear ids, true entries) of the batch's work-groups with any true entry."""
        per = count_per_group(mask, shape)
        nonzero = np.nonzero(per)[0]
        return self.group_index[nonzero], per[nonzero]

    def report_out_of_bounds(self, space, direction, name, dims, dim, comps, bad, site):
        shape = self.shape_of(bad, *comps)
        bad_b = np.broadcast_to(bad, shape)
        g, li, it = (int(v[0]) for v in np.nonzero(bad_b))
        where = tuple(int(np.broadcast_to(c, shape)[g, li, it]) for c in comps)
        flat = 0
        for w, extent in zip(where, dims):
            flat = flat * extent + w
        groups = self.per_group(bad, shape)
        gid = self.group_id_tuple(g)
        self.log.add(Hazard(
            kind="out-of-bounds", schedule=self.schedule.family, array=name, index=flat,
            group_id=gid, local_ids=(li,), epoch=self.epoch, count=int(groups[1].sum()),
            site=f"{space} {site}",
            detail=(f"{space} {direction} of {name}[{', '.join(map(str, where))}] "
                    f"({site}): index {where[dim]} outside dimension {dim} of extent "
                    f"{dims[dim]} (shape {' x '.join(map(str, dims))}), e.g. by work-item "
                    f"{li} of work-group {gid}")), groups, "out-of-bounds accesses")

    def group_id_tuple(self, g: int) -> tuple[int, ...]:
        return tuple(int(self.ids[("group", d)][g, 0, 0])
                     for d in range(len(self.schedule.local_size)))

    def load(self, e: S.Load, mask):
        space = "global" if isinstance(e.array, S.GlobalArray) else "local"
        index, mask = self.access(space, "load", e.array, e.index, mask)
        if not self.values:
            return None
        if self.depths:
            self.last_index[id(e)] = (space, index, mask)
        return self.read_values(space, e.array, index, mask)

    def read_values(self, space, array, index, mask, tables=None):
        """Values at flat ``index`` (0 where ``mask`` is off), shape of ``index``; from
        ``tables`` (the sum-length shadows) instead of the values when given."""
        safe = np.where(mask, index, 0) if not np.all(mask) else index
        if space == "global":
            return (tables or self.buffers)[array.name][safe]
        table = (tables or self.local)[array.name]
        safe = np.asarray(safe)
        safe = safe.reshape((1,) * (3 - safe.ndim) + safe.shape)
        if safe.shape[0] == 1:
            return table[:, safe[0].reshape(-1)].reshape((self.G,) + safe.shape[1:])
        flat = np.broadcast_to(safe, (self.G,) + safe.shape[1:]).reshape(self.G, -1)
        return np.take_along_axis(table, flat, axis=1).reshape((self.G,) + safe.shape[1:])

    def eval_float(self, e: S.FloatExpr, mask):
        """Value (or None when values are off) and the FLOPs per executing work-item."""
        if isinstance(e, S.Load):
            return self.load(e, mask), 0
        if isinstance(e, S.FConst):
            return np.float32(e.value), 0
        if isinstance(e, S.Private):
            self.check_private_set(e.name, mask)
            return self.privates.get(e.name), 0
        if isinstance(e, S.PrivateElem):
            return self.read_private_elem(e, mask), 0
        if isinstance(e, S.FBinOp):
            left, fl = self.eval_float(e.left, mask)
            right, fr = self.eval_float(e.right, mask)
            if not self.values:
                return None, fl + fr + 1
            op = _FLOAT_OPS[e.op]
            return op(left, right, dtype=np.float32), fl + fr + 1
        if isinstance(e, S.FNeg):                  # a sign flip: no FLOP
            value, flop = self.eval_float(e.operand, mask)
            return (None if value is None else np.negative(value, dtype=np.float32)), flop
        if isinstance(e, S.FCall):
            args, ops = [], 1
            for a in e.args:
                value, flop = self.eval_float(a, mask)
                args.append(value)
                ops += flop
            if not self.values:
                return None, ops
            with np.errstate(invalid="ignore", over="ignore"):
                return _FLOAT_FUNCTIONS[e.fn](*args).astype(np.float32), ops
        if isinstance(e, S.Select):
            then, ft = self.eval_float(e.then, mask)
            orelse, fo = self.eval_float(e.orelse, mask)
            if not self.values:
                if self.live_checks:   # its checks do not depend on values
                    self.eval_cond(e.cond)
                return None, ft + fo + 1
            cond = self.eval_cond(e.cond)
            return np.where(cond, then, orelse).astype(np.float32), ft + fo + 1
        raise TypeError(f"unknown float expression {e!r}")

    def depth_of(self, e: S.FloatExpr):
        """Sum length of ``e`` (:mod:`simulator.engine.sum_length`), evaluated right after
        :meth:`eval_float` of the same expression (whose accesses it reuses)."""
        if isinstance(e, S.Load):
            space, index, mask = self.last_index[id(e)]
            if space == "global" and e.array.role == "in" and \
                    e.array.name not in self.seeded:
                return 0
            return self.read_values(space, e.array, index, mask,
                                    self.dbuf if space == "global" else self.dlocal)
        if isinstance(e, S.FConst):
            return sum_length.of_constant(e.value)
        if isinstance(e, S.Private):
            return self.dpriv[e.name]
        if isinstance(e, S.PrivateElem):
            idx = self.last_index[id(e)]
            if isinstance(idx, int):
                return self.dparr[e.array.name][:, :, idx:idx + 1]
            return np.take_along_axis(self.dparr[e.array.name], idx, axis=2)
        if isinstance(e, S.FBinOp):
            combine = sum_length.multiply if e.op == "*" else sum_length.add
            return combine(self.depth_of(e.left), self.depth_of(e.right))
        if isinstance(e, S.FNeg):                  # exact: the operand's sum length
            return self.depth_of(e.operand)
        if isinstance(e, S.FCall) and e.fn in S.EXACT_FLOAT_FUNCTIONS:
            return sum_length.exact(*(self.depth_of(a) for a in e.args))
        if isinstance(e, S.FCall):
            return sum_length.rounded_function(e.fn, self.depth_of(e.args[0]))
        if isinstance(e, S.Select):   # the operand selected, per work-item
            return np.where(self.eval_cond(e.cond), self.depth_of(e.then),
                            self.depth_of(e.orelse)).astype(sum_length.DTYPE)
        raise TypeError(f"unknown float expression {e!r}")

    def count_flop(self, mask, ops: int) -> None:
        if ops:
            per_group = count_per_group(mask, self.shape_of(mask)) * ops
            for obs in self.observers:
                obs.on_flop(self.group_index, per_group)

    def plan_of(self, kind: str, node, make):
        """``make(node, params)`` (a static plan of a loop or block), cached for every
        machine of the same IR node and parameters (a schedule's probe and launch, and the
        short K of :mod:`simulator.engine.accelerators.k_extrapolation`, share their statements)."""
        key = (kind, id(node), self.params_key)
        hit = _PLANS.get(key)
        if hit is not None and hit[0] is node:
            return hit[1]
        if len(_PLANS) >= PLAN_CACHE_ENTRIES:
            _PLANS.clear()
        value = make(node, self.params)
        _PLANS[key] = (node, value)   # the node is kept: its id stays its own
        return value

    # ------------------------------------------------------------------ statements
    def exec_block(self, stmts, mask) -> None:
        runs = [(p, self.plan_of(("runs", p.name), stmts, p.runs)) for p in self.passes]
        runs = [(p, found) for p, found in runs if found]
        skip = 0
        for pos, s in enumerate(stmts):
            if pos < skip:
                continue
            if runs and self.run_pass(runs, pos, mask):
                skip = next(found[pos].stop for _, found in runs if pos in found)
                continue
            m = np.logical_and(mask, self.alive)
            self.live = m
            self.divided.clear()
            if isinstance(s, S.Let):
                self.env[s.name] = self.eval_int(s.value)
            elif isinstance(s, S.DeclareFloat):
                init = np.nan if s.init is None else s.init
                self.privates[s.name] = np.full((self.G, self.L, 1), init, dtype=np.float32)
                self.private_set[s.name] = np.full((self.G, self.L, 1), s.init is not None)
                self.private_full[s.name] = s.init is not None
                if self.depths:
                    self.dpriv[s.name] = np.full((self.G, self.L, 1),
                                                 sum_length.of_constant(s.init),
                                                 sum_length.DTYPE)
            elif isinstance(s, S.DeclarePrivateArray):
                a = s.array
                init = np.nan if s.init is None else s.init
                self.parrays[a.name] = (a, np.full((self.G, self.L, a.size), init,
                                                   dtype=np.float32))
                self.parray_set[a.name] = None if s.init is not None else \
                    np.zeros((self.G, self.L, a.size), dtype=bool)
                if self.depths:
                    self.dparr[a.name] = np.full((self.G, self.L, a.size),
                                                 sum_length.of_constant(s.init),
                                                 sum_length.DTYPE)
            elif isinstance(s, (S.Assign, S.Accumulate)) and s.index:
                self.exec_private_elem_update(s, m)
            elif isinstance(s, (S.Assign, S.Accumulate)):
                self.exec_private_update(s, m)
            elif isinstance(s, S.Store):
                self.exec_store(s, m)
            elif isinstance(s, S.VectorLoad):
                self.exec_vector_load(s, m)
            elif isinstance(s, S.VectorStore):
                self.exec_vector_store(s, m)
            elif isinstance(s, S.If):
                if not np.any(m):
                    continue
                c = self.eval_cond(s.cond)
                then_mask = np.logical_and(m, c)
                if np.any(then_mask):
                    self.exec_block(s.then, then_mask)
                if s.orelse:
                    else_mask = np.logical_and(m, np.logical_not(c))
                    if np.any(else_mask):
                        self.exec_block(s.orelse, else_mask)
            elif isinstance(s, S.For):
                if np.any(m):
                    self.exec_for(s, m)
            elif isinstance(s, S.Barrier):
                self.exec_barrier(s, m)
            elif isinstance(s, S.Return):
                self.alive = np.logical_and(self.alive, np.logical_not(m))
            else:
                raise TypeError(f"unknown statement {s!r}")

    def run_pass(self, runs: list[tuple[Pass, dict[int, Run]]], pos: int, mask) -> bool:
        """Whether a pass ran the statement run starting at ``pos`` (the first that
        applies, in :attr:`passes` order)."""
        for p, found in runs:
            run = found.get(pos)
            if run is not None:
                plan = p.applies(self, run, mask)
                if plan is not None:
                    p.run(self, run, mask, plan)
                    return True
        return False

    def check_private_set(self, name: str, mask) -> None:
        """Report reads of a private variable by work-items that never assigned it."""
        if self.private_full.get(name):
            return
        if name not in self.private_set:
            raise NameError(f"{self.schedule.family}: private {name!r} used before it is "
                            "declared")
        unset = np.logical_and(mask, np.logical_not(self.private_set[name]))
        if np.any(unset):
            shape = self.shape_of(unset)
            g, li, _ = (int(v[0]) for v in np.nonzero(np.broadcast_to(unset, shape)))
            gid = self.group_id_tuple(g)
            groups = self.per_group(unset, shape)
            self.log.add(Hazard(
                kind="uninitialized-private-read", schedule=self.schedule.family, array=name,
                index=-1, group_id=gid, local_ids=(li,), epoch=self.epoch,
                count=int(groups[1].sum()), site=f"private {name}",
                detail=(f"work-item {li} of work-group {gid} reads private {name}, which it "
                        "never assigned (its value, and what is computed from it, is "
                        "undefined)")), groups, "reads")
            self.private_set[name] = np.logical_or(self.private_set[name],
                                                   np.any(unset, axis=2, keepdims=True))

    def exec_private_update(self, s, m) -> None:
        value, ops = self.eval_float(s.value, m)
        accumulate = isinstance(s, S.Accumulate)
        if accumulate:
            self.check_private_set(s.name, m)
        elif not self.private_full.get(s.name):
            self.private_set[s.name] = np.logical_or(self.private_set[s.name],
                                                     np.any(m, axis=2, keepdims=True))
            self.private_full[s.name] = bool(self.private_set[s.name].all())
        self.count_flop(m, ops + (1 if accumulate else 0))
        if not self.values:
            return
        old = self.privates[s.name]
        if self.depths:
            terms, before = self.depth_of(s.value), self.dpriv[s.name]
            self.dpriv[s.name] = sum_length.accumulate(before, terms, m) if accumulate else \
                np.where(m, terms, before).astype(sum_length.DTYPE)
        if accumulate:
            contrib = np.where(m, value, np.float32(0)).sum(axis=2, keepdims=True,
                                                            dtype=np.float32)
            self.privates[s.name] = old + contrib
        else:
            self.privates[s.name] = np.where(m, value, old).astype(np.float32)

    # ------------------------------------------------------------------ private arrays
    def private_elem_index(self, name: str, index: tuple, mask, direction: str):
        """Flat element index of ``name[index]`` per entry, shape (G, L, I), and the mask
        with out-of-bounds entries off (reported as out-of-bounds hazards)."""
        if name not in self.parrays:
            raise NameError(f"{self.schedule.family}: private array {name!r} used before it "
                            "is declared")
        array, _ = self.parrays[name]
        dims = tuple(d.value for d in array.dims)
        comps = [np.asarray(self.eval_int(i), dtype=np.int64) for i in index]
        site = self.site(direction, array, index)
        for d, (comp, extent) in enumerate(zip(comps, dims)):
            bad = np.logical_and(mask, (comp < 0) | (comp >= extent))
            if np.any(bad):
                self.report_out_of_bounds("private", direction, name, dims, d, comps, bad,
                                          site)
                mask = np.logical_and(mask, np.logical_not(bad))
        flat = comps[0]
        for comp, extent in zip(comps[1:], dims[1:]):
            flat = flat * extent + comp
        shape = self.shape_of(flat, mask)
        mask_b = np.broadcast_to(mask, shape)
        return np.where(mask_b, np.broadcast_to(flat, shape), 0), mask_b

    def private_elem_flat(self, name: str, index: tuple) -> int | None:
        """Flat element index of ``name[index]`` when every index is one integer for all
        work-items and within bounds; ``None`` otherwise (then :meth:`private_elem_index`
        handles it, reporting what it must)."""
        if name not in self.parrays:
            return None
        array = self.parrays[name][0]
        flat = 0
        for i, d in zip(index, array.dims):
            comp = self.eval_int(i)
            if np.ndim(comp) or not 0 <= comp < d.value:
                return None
            flat = flat * d.value + int(comp)
        return flat if len(index) == len(array.dims) else None

    def read_private_elem(self, e: S.PrivateElem, mask):
        if self.depths and self.shape_of(mask)[2] == 1:
            flat = self.private_elem_flat(e.array.name, e.index)
            is_set = self.parray_set.get(e.array.name)
            if flat is not None and (is_set is None or not np.any(np.logical_and(
                    mask, np.logical_not(is_set[:, :, flat:flat + 1])))):
                self.last_index[id(e)] = flat   # one static element: a slice, same values
                return self.parrays[e.array.name][1][:, :, flat:flat + 1]
        if self.static_private_elements:
            flat = self.private_elem_flat(e.array.name, e.index)
            if flat is not None:
                is_set = self.parray_set[e.array.name]
                if is_set is None or not np.any(np.logical_and(
                        mask, np.logical_not(is_set[:, :, flat:flat + 1]))):
                    return None
        idx, ok = self.private_elem_index(e.array.name, e.index, mask, "load")
        is_set = self.parray_set[e.array.name]
        if is_set is not None:
            unset = ok & ~np.take_along_axis(is_set, idx, axis=2)
            if np.any(unset):
                shape = unset.shape
                g, li, _ = (int(v[0]) for v in np.nonzero(unset))
                gid = self.group_id_tuple(g)
                groups = self.per_group(unset, shape)
                self.log.add(Hazard(
                    kind="uninitialized-private-read", schedule=self.schedule.family,
                    array=e.array.name, index=int(idx[g, li, 0]), group_id=gid,
                    local_ids=(li,), epoch=self.epoch, count=int(groups[1].sum()),
                    site=f"private {e.array.name}",
                    detail=(f"work-item {li} of work-group {gid} reads private "
                            + element_text(e.array.name, int(idx[g, li, 0]),
                                           tuple(d.value for d in e.array.dims))
                            + ", which it never assigned")), groups, "reads")
        if not self.values:
            return None
        if self.depths:
            self.last_index[id(e)] = idx
        return np.take_along_axis(self.parrays[e.array.name][1], idx, axis=2)

    def exec_private_elem_update(self, s, m) -> None:
        value, ops = self.eval_float(s.value, m)
        accumulate = isinstance(s, S.Accumulate)
        if accumulate:
            self.read_private_elem(S.PrivateElem(self.parrays[s.name][0], s.index), m)
        if self.depths and self.update_static_elem(s, m, value, ops, accumulate):
            return
        if self.static_private_elements:
            flat = self.private_elem_flat(s.name, s.index)
            if flat is not None:
                iterations = self.shape_of(m)[2]
                if iterations != 1 and not self.blocked:
                    raise ValueError(f"{self.schedule.family}: private array {s.name} written "
                                     "in a vectorized loop")
                self.count_flop(m, ops + (1 if accumulate else 0))
                is_set = self.parray_set[s.name]
                if is_set is not None:   # set where any iteration (of a block) assigns it
                    is_set[:, :, flat] |= np.broadcast_to(
                        m, (self.G, self.L, iterations)).any(axis=2)
                return
        if self.blocked and not self.values and \
                loop_blocks.assign_elements(self, s, m, ops + (1 if accumulate else 0)):
            return
        idx, ok = self.private_elem_index(s.name, s.index, m, "store")
        if idx.shape[2] != 1 and not self.blocked:
            raise ValueError(f"{self.schedule.family}: private array {s.name} written in a "
                             "vectorized loop")
        self.count_flop(m, ops + (1 if accumulate else 0))
        is_set = self.parray_set[s.name]
        if is_set is not None and idx.shape[2] != 1:
            # a block of iterations (simulator.engine.accelerators.loop_blocks): set where any entry assigns it
            for flat in np.unique(idx[ok]):
                is_set[:, :, flat] |= (ok & (idx == flat)).any(axis=2)
        elif is_set is not None:
            np.put_along_axis(is_set, idx, np.take_along_axis(is_set, idx, axis=2) | ok,
                              axis=2)
        if not self.values:
            return
        table = self.parrays[s.name][1]
        old = np.take_along_axis(table, idx, axis=2)
        value = np.broadcast_to(np.asarray(value, dtype=np.float32), old.shape)
        new = (old + np.where(ok, value, np.float32(0))) if accumulate else \
            np.where(ok, value, old)
        np.put_along_axis(table, idx, new.astype(np.float32), axis=2)
        if self.depths:
            shadow = self.dparr[s.name]
            before = np.take_along_axis(shadow, idx, axis=2)
            terms = np.broadcast_to(self.depth_of(s.value), before.shape)
            after = sum_length.add(before, terms) if accumulate else terms
            np.put_along_axis(shadow, idx, np.where(ok, after, before).astype(
                sum_length.DTYPE), axis=2)

    def update_static_elem(self, s, m, value, ops: int, accumulate: bool) -> bool:
        """With sum lengths: ``name[index] (+)= value`` where the index is one in-bounds
        element for every work-item, by slices (the same result as the indexed path);
        ``False`` (nothing done) otherwise."""
        flat = self.private_elem_flat(s.name, s.index)
        if flat is None or self.shape_of(m)[2] != 1:
            return False
        self.count_flop(m, ops + (1 if accumulate else 0))
        on = np.broadcast_to(m, (self.G, self.L, 1))
        is_set = self.parray_set[s.name]
        if is_set is not None:
            is_set[:, :, flat] |= on[:, :, 0]
        table, shadow = self.parrays[s.name][1], self.dparr[s.name]
        old, before = table[:, :, flat:flat + 1], shadow[:, :, flat:flat + 1].copy()
        value = np.broadcast_to(np.asarray(value, dtype=np.float32), old.shape)
        terms = np.broadcast_to(self.depth_of(s.value), before.shape)
        new = (old + np.where(on, value, np.float32(0))) if accumulate else \
            np.where(on, value, old)
        table[:, :, flat:flat + 1] = new.astype(np.float32)
        after = sum_length.add(before, terms) if accumulate else terms
        shadow[:, :, flat:flat + 1] = np.where(on, after, before)
        return True

    def exec_store(self, s: S.Store, m) -> None:
        value, ops = self.eval_float(s.value, m)
        self.count_flop(m, ops)
        space = "global" if isinstance(s.array, S.GlobalArray) else "local"
        index, m = self.access(space, "store", s.array, s.index, m)
        if not self.values:
            return
        self.write_values(space, s.array, index, m, value)
        if self.depths:
            self.write_values(space, s.array, index, m, self.depth_of(s.value),
                              self.dbuf if space == "global" else self.dlocal)

    def write_values(self, space, array, index, m, value, tables=None) -> None:
        """Store ``value`` at flat ``index`` where ``m`` is on (into ``tables``, the
        sum-length shadows, when given)."""
        shape = self.shape_of(index, m)
        idx_b = np.broadcast_to(index, shape)
        m_b = np.broadcast_to(m, shape)
        dtype = np.float32 if tables is None else sum_length.DTYPE
        val_b = np.broadcast_to(np.asarray(value, dtype=dtype), shape)
        if space == "global":
            (tables or self.buffers)[array.name][idx_b[m_b]] = val_b[m_b]
        else:
            g_b = np.broadcast_to(np.arange(self.G).reshape(self.G, 1, 1), shape)
            (tables or self.local)[array.name][g_b[m_b], idx_b[m_b]] = val_b[m_b]

    def exec_vector_load(self, s: S.VectorLoad, m) -> None:
        space = "global" if isinstance(s.array, S.GlobalArray) else "local"
        index, ok = self.access(space, "load", s.array, s.index, m, width=s.width)
        for w, name in enumerate(s.names):
            if name not in self.private_set:
                raise NameError(f"{self.schedule.family}: private {name!r} used before it is "
                                "declared")
            if not self.private_full.get(name):
                self.private_set[name] = np.logical_or(self.private_set[name],
                                                       np.any(m, axis=2, keepdims=True))
                self.private_full[name] = bool(self.private_set[name].all())
            if self.values:
                value = self.read_values(space, s.array, index + w, ok)
                self.privates[name] = np.where(m, value, self.privates[name]).astype(np.float32)
            if self.depths:
                length = 0 if space == "global" and s.array.role == "in" and \
                    s.array.name not in self.seeded else \
                    self.read_values(space, s.array, index + w, ok,
                                     self.dbuf if space == "global" else self.dlocal)
                self.dpriv[name] = np.where(m, length, self.dpriv[name]).astype(
                    sum_length.DTYPE)

    def exec_vector_store(self, s: S.VectorStore, m) -> None:
        values, ops = [], 0
        for v in s.values:
            value, flop = self.eval_float(v, m)
            values.append(value)
            ops += flop
        self.count_flop(m, ops)
        space = "global" if isinstance(s.array, S.GlobalArray) else "local"
        index, m = self.access(space, "store", s.array, s.index, m, width=s.width)
        if not self.values:
            return
        for w, value in enumerate(values):
            self.write_values(space, s.array, index + w, m, value)
            if self.depths:
                self.write_values(space, s.array, index + w, m, self.depth_of(s.values[w]),
                                  self.dbuf if space == "global" else self.dlocal)

    def exec_barrier(self, barrier: S.Barrier, m) -> None:
        arrived = count_per_group(m, (self.G, self.L, 1))
        diverged = np.nonzero((arrived > 0) & (arrived < self.L))[0]
        if len(diverged):
            g = int(diverged[0])
            if barrier.source:
                site = f"barrier at {barrier.source}"
                named = f"the {site}"
            else:
                ordinal = self.barrier_ordinal(barrier)
                site, named = f"barrier {ordinal}", f"barrier {ordinal} (in source order)"
            self.log.add(Hazard(
                kind="barrier-divergence", schedule=self.schedule.family, array="", index=-1,
                group_id=self.group_id_tuple(g),
                local_ids=tuple(int(i) for i in np.nonzero(~np.broadcast_to(
                    m[min(g, m.shape[0] - 1)], (self.L, 1))[:, 0])[0][:8]),
                epoch=self.epoch, count=int(arrived[diverged].sum()),
                site=site,
                detail=(f"{named} is reached by some work-items "
                        f"of a work-group and not by others: e.g. only {int(arrived[g])} of "
                        f"{self.L} work-items of work-group {self.group_id_tuple(g)} reach it "
                        f"in barrier interval {self.epoch}")),
                (self.group_index[diverged], arrived[diverged]), "arriving work-items")
        for obs in self.observers:
            obs.on_barrier(self.group_index, arrived)
        if barrier.global_fence:
            for obs in self.observers:
                obs.on_global_fence(self.group_index, arrived)
        self.epoch += 1

    def barrier_ordinal(self, barrier: S.Barrier) -> int:
        """1-based position of ``barrier`` among the schedule's barriers, in the order of
        the schedule's statements (the name of a barrier without ``source``)."""
        if not self.barriers:
            def walk(stmts):
                for s in stmts:
                    if isinstance(s, S.Barrier):
                        self.barriers[id(s)] = len(self.barriers) + 1
                    elif isinstance(s, S.If):
                        walk(s.then)
                        walk(s.orelse)
                    elif isinstance(s, S.For):
                        walk(s.body)
            walk(self.schedule.body)
        return self.barriers[id(barrier)]

    def exec_for(self, loop: S.For, m) -> None:
        for p in self.passes:
            plan = p.applies(self, loop, m)
            if plan is not None:
                p.run(self, loop, m, plan)
                return
        self.live = m
        step = self.eval_int(loop.step)
        if np.any(np.asarray(step) <= 0):
            raise ExecutionError(f"{self.schedule.family}: loop {loop.var} has a step of "
                                 f"{int(np.min(step))}: it must be at least 1 (the loop would "
                                 "never end)")
        if self.is_vectorizable(loop):
            self.exec_for_blocks(loop, m, step)
            return
        self.loop_trips(loop, m, step)   # refuses a loop beyond the limit before it runs
        var = self.eval_int(loop.start)
        while True:
            self.env[loop.var] = var
            live = np.logical_and(m, self.alive)
            self.live = False   # the bounds were checked once, on entry (loop_trips)
            stop = self.eval_int(loop.stop)
            self.live = live
            inside = np.logical_and(live, np.less(var, stop))
            if not np.any(inside):
                break
            self.exec_block(loop.body, inside)
            var = var + step
        self.env.pop(loop.var, None)

    def is_vectorizable(self, loop: S.For) -> bool:
        """:func:`simulator.ir.static.is_vectorizable`, cached per loop."""
        key = id(loop)
        if key not in self.vectorizable:
            self.vectorizable[key] = is_vectorizable(loop)
        return self.vectorizable[key]

    def loop_trips(self, loop: S.For, m, step) -> tuple[np.ndarray, np.ndarray, int]:
        """``loop``'s start, stop and the most iterations a work-item of mask ``m`` runs.

        Raises:
            ExecutionError: more than :data:`LOOP_TRIPS_LIMIT` iterations.
        """
        start = np.asarray(self.eval_int(loop.start), dtype=np.int64)
        stop = np.asarray(self.eval_int(loop.stop), dtype=np.int64)
        trips = np.where(m, np.maximum(0, -((start - stop) // step)), 0)
        most = int(trips.max()) if trips.size else 0
        if most > LOOP_TRIPS_LIMIT:
            raise ExecutionError(f"{self.schedule.family}: loop {loop.var} runs {most:,} "
                                 f"iterations, above the simulation limit of "
                                 f"{LOOP_TRIPS_LIMIT:,} for one loop")
        return start, stop, most

    def exec_for_blocks(self, loop: S.For, m, step) -> bool:
        """Run ``loop`` in blocks of iterations; whether any block ran.

        Raises:
            ExecutionError: the loop runs more than :data:`LOOP_TRIPS_LIMIT` iterations.
        """
        start, stop, most = self.loop_trips(loop, m, step)
        # Blocks hold a multiple of VECTOR_BLOCK iterations, so that observers can see runs of
        # consecutive iterations (e.g. local loads a compiler would merge into vector loads).
        groups = self.block_groups or self.G
        block_len = max(VECTOR_BLOCK, BLOCK_ELEMS // (groups * self.L) // VECTOR_BLOCK
                        * VECTOR_BLOCK)
        for first in range(0, most, block_len):
            j = np.arange(first, min(first + block_len, most), dtype=np.int64).reshape(1, 1, -1)
            var = start.reshape((1,) * (3 - start.ndim) + start.shape) + step * j
            self.env[loop.var] = var
            inside = np.logical_and(m, np.less(var, stop))
            self.exec_block(loop.body, inside)
        self.env.pop(loop.var, None)
        return most > 0


def _has_live_check(node, params: dict[str, int]) -> bool:
    """Whether ``node`` (a statement, an expression or a tuple of them) holds an expression
    checked per executing work-item (:attr:`Machine.live_checks`): an unsigned 64-bit
    :class:`simulator.ir.nodes.Wrap`, or a ``/`` or ``%`` whose divisor is not a non-zero
    expression of constants and ``params``."""
    if isinstance(node, S.Wrap) and node.bits == 64 and not node.signed:
        return True
    if isinstance(node, S.BinOp) and node.op in ("/", "%"):
        try:
            if eval_static(node.right, params) == 0:
                return True
        except (TypeError, KeyError, ExecutionError):
            return True
    if isinstance(node, (tuple, list)):
        return any(_has_live_check(n, params) for n in node)
    if isinstance(node, (S.Stmt, S.IntExpr, S.Cond, S.FloatExpr)):
        return any(_has_live_check(getattr(node, f), params)
                   for f in node.__dataclass_fields__)
    return False
