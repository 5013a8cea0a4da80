"""The simulator's entry points: execute a schedule on the engine
(:class:`simulator.engine.machine.Machine`) batch by batch and collect what the launch
produced.

:func:`simulate` executes a whole launch (or one work-group per class, with the work-group
classes accelerator) with the counters and hazard checks; :func:`probe_runner` executes
chosen work-groups with one observer (address probes); :func:`largest_sum_length_of_groups` counts
the largest sum length of the outputs chosen work-groups store.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine import error_bound, sum_length
from tiletraffic.simulator.ir.static import eval_static
from tiletraffic.simulator.engine.accelerators import SIMULATE, Accelerators, NotApplicable
from tiletraffic.simulator.engine.accelerators import k_extrapolation
from tiletraffic.simulator.engine.accelerators.classes import group_classes
from tiletraffic.simulator.engine.accelerators.class_safety import classes_problem
from tiletraffic.simulator.engine.accelerators.data_classes import DataClasses, data_classes
from tiletraffic.simulator.engine.limits import (GENERIC_GPU, DeviceLimits,
                                                 check_schedule_limits)
from tiletraffic.simulator.engine.data_inputs import launch_inputs
from tiletraffic.simulator.engine.machine import Machine
from tiletraffic.simulator.engine.unwritten import unwritten_fill
from tiletraffic.simulator.observers.counters import Observer, TrafficCounter, TrafficCounts
from tiletraffic.simulator.observers.global_races import GlobalRaceDetector
from tiletraffic.simulator.observers.hazards import Hazard, HazardError, HazardLog
from tiletraffic.simulator.observers.local_races import (LocalRaceDetector,
                                                         UninitializedLocalRead,
                                                         UninitializedOutputRead,
                                                         UnwrittenOutput)

BATCH_WORK_ITEMS = 1 << 20
"""Work-items executed together (one batch of work-groups), bounding peak memory."""


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
        error_bounds: with ``error_bounds=True``, each output's error bound per element
            (:mod:`simulator.engine.error_bound`: ``|device value - exact value|`` at most
            this for any evaluation its device model allows), float64 in the output's
            logical shape (0 where unwritten, inf where no bound holds).
    """

    schedule: S.Schedule
    outputs: dict[str, np.ndarray]
    counts: TrafficCounts
    global_loads_per_group: np.ndarray
    read_maps: dict[str, np.ndarray]
    hazards: list[Hazard]
    sum_lengths: dict[str, np.ndarray] | None = None
    representatives: np.ndarray | None = None
    error_bounds: dict[str, np.ndarray] | None = None


def simulate(schedule: S.Schedule, inputs: dict[str, np.ndarray] | None = None, *,
             compute_values: bool = True, read_maps: Iterable[str] = (),
             limits: DeviceLimits | None = GENERIC_GPU, hazards: str = "raise",
             observers: Iterable[Observer] = (), race_checks: bool = True,
             accelerators: Accelerators = SIMULATE,
             batch_work_items: int = BATCH_WORK_ITEMS,
             sum_lengths: bool = False,
             input_sum_lengths: dict[str, int] | None = None,
             error_bounds: bool = False) -> SimulationResult:
    """Execute ``schedule`` and count its traffic.

    Args:
        schedule: the schedule to execute.
        inputs: the global inputs by name in their logical shapes (A as M×K row-major, ...),
            converted to float32. Required when ``compute_values`` is true.
        compute_values: compute the outputs; ``False`` counts only (same counts, faster; a
            schedule that branches on floats of the data is then counted on
            :func:`simulator.engine.data_inputs.launch_inputs`).
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
            work-group instead (``SimulationResult.representatives`` is then ``None``;
            without ``observers``, :mod:`.accelerators.data_classes` where proved).
            Hazards are checked in the representatives only, and races in global memory,
            reads of outputs before anything stored them and unwritten outputs, which need
            every work-group of the launch, are not checked at all. ``loop_blocks`` (with
            ``work_group_classes``) also runs loops that store or assign private arrays in
            blocks of iterations where :mod:`simulator.engine.accelerators.loop_blocks` allows it:
            the same counts, but a hazard's example could differ, so a hazard in a launch
            in which a loop ran blocked (in either ``hazards`` mode), or a later read of
            such a loop's ``Let``, raises
            :class:`simulator.engine.accelerators.NotApplicable` (run again without it:
            :func:`simulator.model.observation.observe_launch` does). ``k_extrapolation``
            (with ``work_group_classes``, no extra ``observers``) takes the counts and the
            per-work-group loads of a long K loop from three short K where
            :func:`simulator.engine.accelerators.k_extrapolation.applies` and every figure
            has equal differences (the hazards are then those of the short runs, which
            must have none); otherwise the whole K loop runs.
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
        error_bounds: also bound each output element's float32 error
            (:attr:`SimulationResult.error_bounds`, with its sum lengths); needs
            ``compute_values`` and no ``input_sum_lengths``.

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
    params, buffers = schedule.param_values, {}
    sizes = {a.name: int(eval_static(a.size, params)) for a in schedule.arrays}
    if compute_values:
        buffers = _prepare_buffers(schedule, inputs, sizes, params)
    for name in read_maps:
        if not schedule.array(name).is_input:
            raise InputError(f"read map requested for {name!r}, which is not an input")
    counter = TrafficCounter(schedule.work_groups, [a.name for a in schedule.arrays],
                             {n: sizes[n] for n in read_maps}, _half_names(schedule))
    log = HazardLog(hazards, num_groups=schedule.num_groups)
    by_classes = accelerators.work_group_classes
    _check_options(by_classes, compute_values, read_maps, sum_lengths or error_bounds,
                   error_bounds and input_sum_lengths)
    observers = list(observers)
    if by_classes and classes_problem(schedule) is not None:
        if not observers and isinstance(found := data_classes(schedule), DataClasses):
            return _by_loaded_integers(schedule, found, hazards, race_checks, batch_work_items)
        by_classes = False   # not proved for this schedule: every work-group runs
        accelerators = accelerators.replace(work_group_classes=False)
    if not compute_values and S.branches_on_data(schedule.body):
        compute_values = True    # its branches need the values: counted on launch_inputs
        buffers = _prepare_buffers(schedule, launch_inputs(schedule), sizes, params)
    if by_classes and accelerators.k_extrapolation and not observers and \
            k_extrapolation.applies(schedule):
        try:
            return _k_extrapolated(schedule, accelerators, race_checks, batch_work_items)
        except NotApplicable:
            pass    # executed with the whole K loop below
    all_observers: list[Observer] = [counter]
    if race_checks:
        all_observers += hazard_observers(schedule, log, sizes, params,
                                           full_launch=not by_classes)
    all_observers += observers
    machine = Machine(schedule, params, sizes, buffers, all_observers, log, compute_values,
                      accelerators)
    if sum_lengths or error_bounds:
        machine.track_sum_lengths(input_sum_lengths, error_bounds=error_bounds)
    per_batch = max(1, batch_work_items // schedule.work_group_items)
    representatives = _run_launch(machine, accelerators, per_batch, by_classes)
    for obs in all_observers:
        obs.on_finish()
    if machine.ran_blocked and log.hazards:   # "report" mode: the same as "raise"
        raise NotApplicable(f"{schedule.family}: hazards in a launch with loops run in blocks "
                            "of iterations (their examples could differ)")
    return _result(machine, counter, read_maps, sum_lengths or error_bounds, representatives)


def _by_loaded_integers(schedule, found, hazards: str, race_checks: bool,
                        batch_work_items: int) -> SimulationResult:
    """The counts of ``schedule`` by its classes by loaded integers ``found``
    (:class:`.accelerators.data_classes.DataClasses`)."""
    return count_work_groups(schedule, found.representatives, found.weights, hazards=hazards,
                             limits=None, race_checks=race_checks,
                             batch_work_items=batch_work_items)


def _check_options(by_classes: bool, compute_values: bool, read_maps, shadows: bool,
                   bounds_and_lengths) -> None:
    """Refuse options of :func:`simulate` that do not go together (``InputError``)."""
    if by_classes and (compute_values or read_maps):
        raise InputError("work-group classes give counts only: use compute_values=False "
                         "and no read maps")
    if shadows and not compute_values:
        raise InputError("sum lengths and error bounds are counted with the values: use "
                         "compute_values=True")
    if bounds_and_lengths:
        raise InputError("error bounds start from exact inputs: no input_sum_lengths")


def _k_extrapolated(schedule: S.Schedule, accelerators: Accelerators, race_checks: bool,
                    batch_work_items: int) -> SimulationResult:
    """The result of ``schedule`` by work-group classes with its counts and per-work-group
    loads extrapolated from three short K (:mod:`.accelerators.k_extrapolation`); hazards
    none (those of the short runs, each of which must have none).

    Raises:
        simulator.engine.accelerators.NotApplicable: a short run has a hazard, or a figure
            of the three does not have equal differences: run the whole K loop.
    """
    values, _, steps = k_extrapolation.schedule_short_k_values(schedule)
    runs = []
    for k in values:
        res = simulate(k_extrapolation.with_k(schedule, k), compute_values=False,
                       limits=None, hazards="report", race_checks=race_checks,
                       accelerators=accelerators.replace(k_extrapolation=False),
                       batch_work_items=batch_work_items)
        if res.hazards:
            raise NotApplicable(f"{schedule.family}: a short K has a hazard")
        runs.append(res)
    if not all(np.array_equal(r.representatives, runs[0].representatives) for r in runs):
        raise k_extrapolation.NotAffine("the short K have different work-group classes")
    counts = k_extrapolation.extrapolate_fields([r.counts for r in runs], steps)
    per_group = k_extrapolation.extrapolate([r.global_loads_per_group for r in runs], steps)
    return SimulationResult(schedule, {}, counts, per_group, {}, [], None,
                            runs[0].representatives)


def _run_launch(machine: Machine, accelerators: Accelerators, per_batch: int,
                by_classes: bool) -> np.ndarray | None:
    """Execute the launch of ``machine``'s schedule in batches of ``per_batch`` work-groups:
    one work-group per class where ``by_classes`` (their linear ids returned, the counts
    weighted by the class sizes), else every work-group (``None`` returned).

    Raises:
        simulator.engine.accelerators.NotApplicable: a hazard where a loop ran blocked.
    """
    schedule = machine.schedule
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
    return representatives


def _result(machine: Machine, counter: TrafficCounter, read_maps, sum_lengths: bool,
            representatives: np.ndarray | None) -> SimulationResult:
    """The :class:`SimulationResult` of the launch ``machine`` executed."""
    schedule, params = machine.schedule, machine.params
    outputs = {}
    if machine.values:
        for a in schedule.arrays:
            if a.is_output:
                outputs[a.name] = machine.buffers[a.name].reshape([params[s] for s in a.shape])
    maps = {n: counter.read_maps[n].reshape([params[s] for s in schedule.array(n).shape])
            for n in read_maps}
    lengths = bounds = None
    if sum_lengths:
        lengths = {a.name: np.maximum(machine.shadow.lengths_of(machine.dbuf[a.name]), 0)
                   .reshape([params[d] for d in a.shape]) for a in schedule.arrays
                   if a.is_output}
    if machine.depths and machine.shadow is error_bound:
        bounds = {a.name: error_bound.tolerance(machine.dbuf[a.name]).reshape(
            [params[d] for d in a.shape]) for a in schedule.arrays if a.is_output}
    return SimulationResult(schedule, outputs, counter.finish(),
                            counter.global_loads_per_group, maps, machine.log.hazards,
                            lengths, representatives, bounds)


def count_work_groups(schedule: S.Schedule, representatives: np.ndarray,
                      weights: np.ndarray, *, hazards: str = "raise",
                      limits: DeviceLimits | None = GENERIC_GPU, race_checks: bool = True,
                      batch_work_items: int = BATCH_WORK_ITEMS) -> SimulationResult:
    """The counts of ``schedule`` (values off) from the work-groups ``representatives``
    (linear ids) alone, each standing for ``weights`` work-groups of identical counts (the
    caller proved it: :mod:`.accelerators.data_classes`). Hazards are those of the
    representatives; races in global memory, reads of outputs before a store and unwritten
    outputs are not checked. ``SimulationResult.representatives`` holds them.

    Raises:
        simulator.engine.limits.LimitError: the schedule exceeds ``limits``.
        simulator.observers.hazards.HazardError: a hazard, in ``"raise"`` mode.
    """
    if limits is not None:
        check_schedule_limits(schedule, limits)
    params = schedule.param_values
    sizes = {a.name: int(eval_static(a.size, params)) for a in schedule.arrays}
    counter = TrafficCounter(schedule.work_groups, [a.name for a in schedule.arrays], {},
                             _half_names(schedule))
    log = HazardLog(hazards, num_groups=schedule.num_groups)
    observers: list[Observer] = [counter]
    if race_checks:
        observers += hazard_observers(schedule, log, sizes, params, full_launch=False)
    machine = Machine(schedule, params, sizes, {}, observers, log, False,
                      SIMULATE)
    reps = np.asarray(representatives, dtype=np.int64)
    per_batch = max(1, batch_work_items // schedule.work_group_items)
    for first in range(0, len(reps), per_batch):
        machine.run_batch(reps[first:first + per_batch], weights[first:first + per_batch])
    for obs in observers:
        obs.on_finish()
    return _result(machine, counter, (), False, reps)


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


def largest_sum_length_of_groups(schedule: S.Schedule, linear_ids,
                                 input_sum_lengths: dict[str, int] | None = None) -> int:
    """The largest sum length (:mod:`simulator.engine.sum_length`, the K of the tolerance) of
    the output elements that the work-groups ``linear_ids`` (linear ids, dimension 0
    fastest) store, executing only those, with values (zero inputs: sum lengths do not
    depend on values); 0 where they store nothing. Hazards are ignored (check them
    first). ``input_sum_lengths``: as for :func:`simulate`."""
    params = schedule.param_values
    sizes = {a.name: int(eval_static(a.size, params)) for a in schedule.arrays}
    buffers = {a.name: np.zeros(sizes[a.name], np.float32) for a in schedule.arrays}
    machine = Machine(schedule, params, sizes, buffers, [], HazardLog("report"), True)
    machine.track_sum_lengths(input_sum_lengths)
    ids = np.asarray(linear_ids, dtype=np.int64)
    per_batch = max(1, BATCH_WORK_ITEMS // schedule.work_group_items)
    for first in range(0, len(ids), per_batch):
        machine.run_batch(ids[first:first + per_batch])
    return max([0, *(sum_length.largest(machine.dbuf[a.name])
                     for a in schedule.arrays if a.is_output)])


def group_id_of(schedule: S.Schedule, linear: int) -> tuple[int, ...]:
    """Work-group id per NDRange dimension of linear work-group ``linear`` (dim 0 fastest)."""
    out = []
    for n in schedule.num_groups:
        out.append(linear % n)
        linear //= n
    return tuple(out)


def hazard_observers(schedule, log, sizes, params, full_launch=True) -> list[Observer]:
    """The observers that find every hazard kind of ``schedule`` at ``sizes``/``params``,
    reporting into ``log``; ``full_launch=False`` where only part of the launch's
    work-groups run: the observers that need every work-group (global races, reads of
    outputs before their store, unwritten outputs) are then left out."""
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


def _half_names(schedule) -> tuple[str, ...]:
    """The global arrays of ``schedule`` that store ``half``."""
    return tuple(a.name for a in schedule.arrays if a.is_half)


def _prepare_buffers(schedule, inputs, sizes, params) -> dict[str, np.ndarray]:
    inputs = inputs or {}
    buffers = {}
    for a in schedule.arrays:
        shape = tuple(params[s] for s in a.shape)
        if a.role == "out":
            buffers[a.name] = unwritten_fill(sizes[a.name])
            continue
        if a.is_int:        # its contents are the schedule's (GlobalArray.values)
            buffers[a.name] = np.asarray(a.values, dtype=np.float32)
            continue
        if a.name not in inputs:
            raise InputError(f"{schedule.family} needs input {a.name!r} of shape {shape}")
        arr = np.asarray(inputs[a.name])
        if arr.shape != shape:
            raise InputError(f"input {a.name!r} has shape {arr.shape}, expected {shape} "
                             f"({' x '.join(a.shape)})")
        buffers[a.name] = (np.array(arr, dtype=np.float32).reshape(-1) if a.is_output else
                           np.ascontiguousarray(arr, dtype=np.float32).reshape(-1))
        if a.is_half:       # the device holds the nearest float16 of each given value
            buffers[a.name] = buffers[a.name].astype(np.float16).astype(np.float32)
    return buffers

