"""The model of one launch: simulate it with a device model's observers, then predict its
cache, DRAM and time (:func:`model_launch`, what ``tiletraffic model`` prints)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from tiletraffic.simulator.engine.accelerators import ALL, Accelerators, NotApplicable
from tiletraffic.simulator.engine.accelerators import k_extrapolation
from tiletraffic.simulator.observers.counters import TrafficCounts
from tiletraffic.simulator.engine.limits import check_schedule_limits
from tiletraffic.simulator.model.device_model import DeviceModel, GuessedValueWarning
from tiletraffic.simulator.model.dram import BufferReads
from tiletraffic.simulator.observers.memory import MemoryCounts
from tiletraffic.simulator.model.observation import (LaunchObservation, device_limits,
                                                     observe_launch)
from tiletraffic.simulator.model.prediction import (TrafficPrediction, buffer_reads,
                                                    check_resident, predict)
from tiletraffic.simulator.model.registers import estimate_registers
from tiletraffic.simulator.ir.nodes import Schedule


@dataclass
class ModelledLaunch:
    """Exact counts, memory-system counts and predictions of one launch."""

    counts: TrafficCounts
    memory: MemoryCounts
    prediction: TrafficPrediction
    buffers: dict[str, BufferReads] = field(default_factory=dict)
    """Per loaded buffer, what the DRAM model was given (:func:`simulator.model.prediction.buffer_reads`)."""

    def to_dict(self) -> dict:
        """Flat JSON-ready mapping: the traffic counters, then the memory-system ones, then
        the predictions (keys as documented for ``tiletraffic simulate --json``)."""
        pred = self.prediction.to_dict()
        return {**self.counts.to_dict(), **self.memory.to_dict(), **pred}



def observe_for_model(schedule: Schedule, model: DeviceModel,
                      accelerators: Accelerators = ALL) -> LaunchObservation:
    """What :func:`model_launch` predicts from: ``schedule`` simulated with ``model``'s
    observers (:func:`simulator.model.observation.observe_launch`), through K extrapolation where
    ``accelerators`` allow it and it applies (:mod:`simulator.engine.accelerators.k_extrapolation`),
    else the whole K loop. Its result does not depend on the registers, so one observation
    serves every prediction of the same schedule on the same model's observers.

    Raises:
        simulator.engine.limits.LimitError, simulator.observers.hazards.HazardError: as :func:`simulate`.
    """
    limits = device_limits(model)
    if accelerators.k_extrapolation and accelerators.work_group_classes and \
            k_extrapolation.applies(schedule, model.local_vector_words):
        check_schedule_limits(schedule, limits)
        try:
            return k_extrapolation.extrapolated_observation(
                schedule, lambda s: observe_launch(s, model, accelerators=accelerators,
                                                   limits=limits),
                model.local_vector_words)
        except NotApplicable:
            pass
    return observe_launch(schedule, model, accelerators=accelerators, limits=limits)


def model_launch(schedule: Schedule, model: DeviceModel, *,
                 accelerators: Accelerators = ALL,
                 registers_per_work_item: int | None = None,
                 stacklevel: int = 1, instructions=None) -> ModelledLaunch:
    """Simulate ``schedule`` (counts only) with the memory-system observers of ``model``
    (:func:`simulator.model.observation.observe_launch`) and predict cache, DRAM and time
    (:func:`simulator.model.prediction.predict`).

    ``accelerators`` (default: all, :data:`simulator.engine.accelerators.ALL`): each gives the
    result of full execution exactly. With ``k_extrapolation`` (and
    ``work_group_classes``), a built-in family is simulated at three smaller K (the
    reduction length) and every count extrapolated to the real K where all of them are
    proved affine (:mod:`simulator.engine.accelerators.k_extrapolation`); where that does not
    apply, the whole K loop is executed.

    ``registers_per_work_item``: the compiled kernel's registers per work-item (NVIDIA:
    ``RunResult.registers_per_work_item``, from the ``-cl-nv-verbose`` build log); they
    limit the resident work-groups. Without it, a schedule with private arrays gets an
    estimate (:func:`simulator.model.registers.estimate_registers`, a guess: warned with a
    :class:`GuessedValueWarning` and named in ``methods``); other schedules are modelled
    without a register limit.

    ``instructions``: the compiled kernel's instruction counts
    (:class:`simulator.model.instructions.KernelInstructions`), which the issue term then
    uses in place of the simulator's own count; ``None``: its own count.

    Its warnings (guessed values, estimated registers, strided requests) name the line
    ``stacklevel`` frames up from here: 1 (default) the caller's, 2 its caller's (the
    ``tiletraffic.model`` facade passes 2, so a user's script sees its own line).

    Raises:
        simulator.engine.limits.LimitError, simulator.observers.hazards.HazardError: as :func:`simulate`.
        simulator.engine.limits.LimitError: no work-group can be resident on a compute unit
            (work-items, local memory or registers, given or estimated).
        ValueError: ``registers_per_work_item`` not a positive integer, above the model's
            ``max_registers_per_work_item`` or the schedule's ``max_registers``, or too many
            for one work-group to run.
    """
    model.warn_guesses(stacklevel=2 + stacklevel)
    registers, how = registers_per_work_item, None
    if registers is not None:
        budget = schedule.max_registers
        if budget is not None and registers > budget:
            raise ValueError(f"{schedule.family}: registers_per_work_item {registers} is above "
                             f"the schedule's register budget max_registers = {budget}")
        model.register_limited_work_groups_per_cu(schedule.work_group_items, registers)
        problem = model.work_group_register_problem(schedule.work_group_items, registers)
        if problem:
            raise ValueError(f"{schedule.family}: {problem}")
        how = f"registers per work-item: {registers} (given)"
    elif (estimate := estimate_registers(
            schedule, model.max_registers_per_work_item,
            model.registers_for_one_work_group(schedule.work_group_items) or None)):
        registers, how = estimate.registers_per_work_item, estimate.describe()
        warnings.warn(f"{schedule.family}: {how}; pass the compiled kernel's count "
                      "(registers_per_work_item, --registers)", GuessedValueWarning,
                      stacklevel=1 + stacklevel)
    check_schedule_limits(schedule, device_limits(model))   # before the simulation
    check_resident(schedule, model, registers)
    observed = observe_for_model(schedule, model, accelerators)
    prediction = predict(observed, model, registers, stacklevel=2 + stacklevel,
                         instructions=instructions)
    if how is not None:
        prediction.methods["resident_work_groups_per_cu"] = (
            f"occupancy: work-groups, sub-groups, local memory and registers ({how})")
    return ModelledLaunch(observed.counts, observed.memory, prediction,
                          buffer_reads(schedule, observed.footprint, model, observed.offsets))
