"""One launch simulated with the memory-system observers of a device model: what the
prediction (:func:`simulator.model.prediction.predict`) needs.

:func:`observe_launch` runs the simulator counts only, with the traffic counter, the
memory-system counter (:mod:`simulator.observers.memory`), the footprint and barrier-interval
observers (:mod:`simulator.observers.cache`) and the stride observer
(:mod:`simulator.observers.strides`), and with the accelerators asked for
(:class:`simulator.engine.accelerators.Accelerators`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tiletraffic.simulator.engine.accelerators import ALL, Accelerators, NotApplicable
from tiletraffic.simulator.engine.accelerators.classes import load_offsets
from tiletraffic.simulator.observers.cache import FootprintObserver, LoadPhaseObserver
from tiletraffic.simulator.observers.counters import TrafficCounts
from tiletraffic.simulator.engine.limits import DeviceLimits
from tiletraffic.simulator.model.device_model import DeviceModel
from tiletraffic.simulator.engine.simulation import probe_runner, simulate
from tiletraffic.simulator.observers.memory import MemoryCounts, MemoryObserver
from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.observers.strides import StridedRequests, StrideObserver


@dataclass
class LaunchObservation:
    """What :func:`simulator.model.prediction.predict` needs of one simulated launch.

    Attributes:
        schedule: the schedule launched.
        counts: the exact traffic counts.
        memory: the memory-system counts (requests, sectors, lines, wavefronts, bank
            conflicts).
        footprint: the footprint observer (its ``sectors_by_buffer`` and
            ``own_sectors_by_buffer``).
        load_phases: barrier intervals with global loads, summed over work-groups
            (default 0: no latency terms).
        offsets: element offsets of each buffer's loads between neighbouring work-groups
            in NDRange dimensions 0 and 1 (``None`` where not one constant; default none
            known).
        strides: the launch's strided global requests (default ``None``: none modelled).
    """

    schedule: Schedule
    counts: TrafficCounts
    memory: MemoryCounts
    footprint: FootprintObserver
    load_phases: int = 0
    offsets: tuple[dict[str, int | None], dict[str, int | None]] = field(
        default_factory=lambda: ({}, {}))
    strides: StridedRequests | None = None


def observe_launch(schedule: Schedule, model: DeviceModel, *,
                   accelerators: Accelerators = ALL,
                   limits: DeviceLimits | None = None) -> LaunchObservation:
    """Simulate ``schedule`` (counts only) with the memory-system observers of ``model``.

    With ``accelerators.loop_blocks`` (and ``work_group_classes``), loops first run in
    blocks of iterations where :mod:`simulator.engine.accelerators.loop_blocks` proves the counts
    identical; where that run raises :class:`simulator.engine.accelerators.NotApplicable` (a
    hazard, whose example could differ, or a blocked loop's ``Let`` read after it), the
    launch runs again iteration by iteration, which gives full execution's result or error.
    ``limits``: default :func:`device_limits` of ``model``.

    Raises:
        simulator.engine.limits.LimitError, simulator.observers.hazards.HazardError: as
            :func:`simulator.engine.simulation.simulate`.
    """
    if accelerators.loop_blocks and accelerators.work_group_classes:
        try:
            return _observe(schedule, model, accelerators, limits)
        except NotApplicable:
            pass
    return _observe(schedule, model, accelerators.replace(loop_blocks=False), limits)


def _observe(schedule: Schedule, model: DeviceModel, accelerators: Accelerators,
             limits: DeviceLimits | None) -> LaunchObservation:
    memory = MemoryObserver(model.sub_group_size, model.sector_bytes, model.line_bytes,
                            model.local_banks, model.bank_bytes, model.local_vector_words,
                            model.local_vector_min_wavefronts)
    runner = probe_runner(schedule, accelerators)
    offsets = (load_offsets(schedule, runner, 0), load_offsets(schedule, runner, 1))
    footprint = FootprintObserver(model.sector_bytes, model.l1_sharing_work_groups, offsets[0])
    phases = LoadPhaseObserver()
    strides = StrideObserver(model.sub_group_size, model.line_bytes,
                             bank_bytes=model.bank_bytes, banks=model.local_banks)
    result = simulate(schedule, compute_values=False, limits=limits or device_limits(model),
                      observers=[memory, footprint, phases, strides],
                      accelerators=accelerators.replace(k_extrapolation=False))
    return LaunchObservation(schedule, result.counts, memory.counts, footprint, phases.phases,
                             offsets, strides.counts)


def device_limits(model: DeviceModel) -> DeviceLimits:
    """The :class:`simulator.engine.limits.DeviceLimits` a launch on ``model`` must respect: its
    work-group size and local memory per work-group, and OpenCL's usual work-group
    dimensions (1024, 1024, 64)."""
    return DeviceLimits(model.name, model.max_work_group_size, (1024, 1024, 64),
                        model.local_mem_bytes_per_work_group)
