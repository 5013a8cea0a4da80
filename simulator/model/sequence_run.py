"""Simulating and modelling a :class:`~simulator.ir.sequence.KernelSequence`: each kernel in
launch order, the buffers one kernel writes read by the next, results combined.

- :func:`simulate`: :func:`simulator.engine.simulation.simulate` for a schedule; for a sequence every
  kernel executed with the same options, each kernel's inputs the sequence's inputs or the
  outputs of the kernels before it (:class:`SequenceResult`);
- :func:`model_sequence`: :func:`simulator.model.launch.model_launch` of every kernel, the
  predicted time their sum (:class:`ModelledSequence`). Each kernel is modelled as a launch
  of its own: a buffer an earlier kernel left in the L2 is read as the model reads any
  input (from DRAM where it does not fit with the rest), so a scratch buffer that stays in
  the L2 is predicted slower than it runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np

from tiletraffic.simulator.engine import sum_length
from tiletraffic.simulator.engine.accelerators import ALL, SIMULATE, Accelerators
from tiletraffic.simulator.observers.counters import (Observer, TrafficCounts, add_counts,
                                                      added)
from tiletraffic.simulator.engine.limits import GENERIC_GPU, DeviceLimits
from tiletraffic.simulator.model.device_model import DeviceModel
from tiletraffic.simulator.engine.simulation import BATCH_WORK_ITEMS, InputError, SimulationResult
from tiletraffic.simulator.engine.simulation import simulate as simulate_kernel
from tiletraffic.simulator.observers.hazards import Hazard
from tiletraffic.simulator.observers.memory import MemoryCounts
from tiletraffic.simulator.model import launch as launch_model
from tiletraffic.simulator.model.launch import ModelledLaunch
from tiletraffic.simulator.model.prediction import TrafficPrediction
from tiletraffic.simulator.ir.sequence import KernelSequence, is_sequence, require_schedule


@dataclass
class SequenceResult:
    """What a simulated kernel sequence produced (fields as :class:`SimulationResult`'s).

    Attributes:
        schedule: the sequence.
        outputs: the sequence's outputs (its arrays of role ``out``/``inout``) after the
            last kernel, logical shapes; empty when values were not computed.
        counts: every kernel's counts added (:func:`simulator.observers.counters.add_counts`).
        hazards: every kernel's hazards, in launch order.
        kernels: each kernel's own :class:`SimulationResult`.
        read_maps: per requested input of the sequence, its reads by all kernels.
        sum_lengths: with ``sum_lengths=True``, per output the sum length of each element,
            counted from the largest sum length of the buffers each kernel read.
        global_loads_per_group: every kernel's, concatenated in launch order.
    """

    schedule: KernelSequence
    outputs: dict[str, np.ndarray]
    counts: TrafficCounts
    hazards: list[Hazard]
    kernels: list[SimulationResult]
    read_maps: dict[str, np.ndarray] = field(default_factory=dict)
    sum_lengths: dict[str, np.ndarray] | None = None
    global_loads_per_group: np.ndarray | None = None
    representatives: np.ndarray | None = None


def simulate(schedule, inputs: dict[str, np.ndarray] | None = None, *,
             compute_values: bool = True, read_maps: Iterable[str] = (),
             limits: DeviceLimits | None = GENERIC_GPU, hazards: str = "raise",
             observers: Iterable[Observer] = (), race_checks: bool = True,
             accelerators: Accelerators = SIMULATE,
             batch_work_items: int = BATCH_WORK_ITEMS,
             sum_lengths: bool = False, error_bounds: bool = False):
    """Execute a schedule (:func:`simulator.engine.simulation.simulate`, the same arguments) or a
    kernel sequence (each kernel with these arguments, ``observers`` seeing every kernel
    in turn; returns :class:`SequenceResult`). ``error_bounds`` (each output element's
    running error bound, :mod:`simulator.engine.error_bound`) applies to a schedule only.

    Raises:
        TypeError: ``schedule`` is not a Schedule or KernelSequence (a name, say), or
            ``inputs`` is not a mapping.
        InputError: ``error_bounds`` for a kernel sequence; a name of ``inputs`` that is
            none of the schedule's inputs (the message lists them).
        as :func:`simulator.engine.simulation.simulate`, for the first kernel that raises.
    """
    require_schedule(schedule, "tiletraffic.simulate")
    _check_input_names(schedule, inputs)
    options = dict(compute_values=compute_values, limits=limits, hazards=hazards,
                   race_checks=race_checks, accelerators=accelerators,
                   batch_work_items=batch_work_items, sum_lengths=sum_lengths)
    observers = list(observers)
    if not is_sequence(schedule):
        return simulate_kernel(schedule, inputs, read_maps=read_maps, observers=observers,
                               error_bounds=error_bounds, **options)
    if error_bounds:
        raise InputError(f"{schedule.family}: error bounds are computed for one kernel, not "
                         "a kernel sequence")
    wanted = list(read_maps)
    for name in wanted:
        if not schedule.array(name).is_input:
            raise InputError(f"read map requested for {name!r}, which is not an input")
    buffers = dict(inputs or {})
    longest: dict[str, int] = {}
    results: list[SimulationResult] = []
    for kernel in schedule.kernels:
        mine = {a.name for a in kernel.arrays if a.is_input}
        given = {n: buffers[n] for n in mine if n in buffers} if compute_values else None
        seeds = {n: longest[n] for n in mine if n in longest}
        res = simulate_kernel(kernel, given, read_maps=[n for n in wanted if n in mine],
                              observers=observers, input_sum_lengths=seeds or None,
                              **options)
        results.append(res)
        buffers.update(res.outputs)
        if res.sum_lengths:
            longest.update({n: sum_length.largest(v) for n, v in res.sum_lengths.items()})
    outs = [a.name for a in schedule.arrays if a.is_output]
    maps = {}
    for name in wanted:
        parts = [r.read_maps[name] for r in results if name in r.read_maps]
        maps[name] = sum(parts[1:], parts[0])
    lengths = None
    if sum_lengths:
        lengths = {}
        for r in results:
            lengths.update({n: v for n, v in (r.sum_lengths or {}).items() if n in outs})
    return SequenceResult(
        schedule, {n: buffers[n] for n in outs if n in buffers},
        add_counts([r.counts for r in results]), [h for r in results for h in r.hazards],
        results, maps, lengths,
        np.concatenate([r.global_loads_per_group for r in results]))


def _check_input_names(schedule, inputs) -> None:
    """Refuse ``inputs`` that is not a mapping, or a name in it that is no array of
    ``schedule`` (a misspelt input would be silently left unused); see :func:`simulate`."""
    if inputs is None:
        return
    if not isinstance(inputs, Mapping):
        raise TypeError(f"tiletraffic.simulate: inputs must be a dict of arrays by input "
                        f"name, got {type(inputs).__name__}")
    arrays = {a.name for a in schedule.arrays}
    unknown = [name for name in inputs if name not in arrays]
    if unknown:
        names = ", ".join(a.name for a in schedule.arrays if a.is_input) or "none"
        raise InputError(f"tiletraffic.simulate: {schedule.family} has no input named "
                         f"{str(unknown[0])[:60]!r}; its inputs: {names}")


@dataclass
class ModelledSequence:
    """The model of a kernel sequence: each kernel's :class:`ModelledLaunch`, combined.

    Attributes:
        kernels: each kernel's model, in launch order.
        counts, memory: every kernel's added.
        prediction: the combined prediction (:func:`combine_predictions`): traffic added,
            ``predicted_time_s`` the sum of the kernels' (each with its launch overhead).
    """

    kernels: list[ModelledLaunch]
    counts: TrafficCounts
    memory: MemoryCounts
    prediction: TrafficPrediction
    kernel_names: tuple[str, ...] = ()
    """Each kernel's name, in launch order."""

    def to_dict(self) -> dict:
        """As :meth:`ModelledLaunch.to_dict` for the totals, plus ``kernels``: each
        kernel's own mapping (with its ``kernel`` name), in launch order."""
        return {**self.counts.to_dict(), **self.memory.to_dict(), **self.prediction.to_dict(),
                "kernels": [{"kernel": name, **k.to_dict()}
                            for name, k in zip(self.kernel_names, self.kernels)]}


def add_memory(parts: list[MemoryCounts]) -> MemoryCounts:
    """Memory-system counts of launches one after another: every count added."""
    return added(parts)


def combine_predictions(parts: list[TrafficPrediction], flop: int,
                        global_load_sectors: int) -> TrafficPrediction:
    """One prediction for launches run one after another: traffic and every time term
    added per name, ``predicted_time_s`` the sum of the parts' (not the largest summed
    ceiling: each kernel is bound by its own), ``bound`` that of the longest part, the
    occupancy figures of the longest part, ``flop`` over the DRAM bytes as the arithmetic
    intensity, 1 − L2 read sectors / ``global_load_sectors`` as the L1 hit rate."""
    longest = max(parts, key=lambda p: p.predicted_time_s)
    terms: dict[str, float] = {}
    for p in parts:
        for key, value in p.time_terms_s.items():
            terms[key] = terms.get(key, 0.0) + value
    dram_read = sum(p.dram_read_bytes for p in parts)
    dram_write = sum(p.dram_write_bytes for p in parts)
    l2 = sum(p.l2_read_sectors for p in parts)
    methods = dict(longest.methods)
    methods["predicted_time_s"] = (f"time: the sum of {len(parts)} kernels' predicted times, "
                                   "each its own largest ceiling + barrier latency + tail + "
                                   "launch overhead; time terms are the kernels' added")
    return TrafficPrediction(
        device_model=longest.device_model, l2_read_sectors=l2,
        l1_load_hit_rate=1 - l2 / global_load_sectors if global_load_sectors else 0.0,
        dram_read_bytes=dram_read, dram_write_bytes=dram_write,
        l1_wavefronts=sum(p.l1_wavefronts for p in parts), time_terms_s=terms,
        predicted_time_s=sum(p.predicted_time_s for p in parts), bound=longest.bound,
        arithmetic_intensity_flop_per_byte=flop / max(1, dram_read + dram_write),
        resident_work_groups_per_cu=longest.resident_work_groups_per_cu,
        waves=longest.waves, work_groups_per_cu=longest.work_groups_per_cu,
        dram_read_bytes_lockstep=sum(p.dram_read_bytes_lockstep for p in parts),
        barrier_intervals_per_cu=sum(p.barrier_intervals_per_cu for p in parts),
        registers_per_work_item=longest.registers_per_work_item, methods=methods)


def registers_of(schedule, registers) -> list:
    """Per kernel the registers per work-item to model it with: ``registers`` as given for
    one schedule; for a sequence a list or tuple of one value (or None: estimated) per
    kernel, or one int, the first kernel's (the others as without it: estimated where
    they have private arrays, else not modelled).

    Raises:
        ValueError: a list whose length is not the number of kernels.
    """
    count = len(schedule.kernels) if is_sequence(schedule) else 1
    if isinstance(registers, (list, tuple)):
        if len(registers) != count:
            raise ValueError(f"{len(registers)} register counts for {count} kernel(s)")
        return list(registers)
    return [registers] + [None] * (count - 1)


def model_sequence(schedule, model: DeviceModel, *, accelerators: Accelerators = ALL,
                   registers_per_work_item=None, stacklevel: int = 1, instructions=None):
    """:func:`simulator.model.launch.model_launch` of a schedule, or of every kernel of a sequence
    combined (:class:`ModelledSequence`); ``registers_per_work_item`` as
    :func:`registers_of` takes it. ``instructions``: the build's counts
    (:class:`simulator.model.instructions.InstructionsFile`): a schedule takes its kernel's
    (a file of one kernel answers for any name), each kernel of a sequence the counts of its
    own name (a kernel the file does not name: the simulator's own count).

    Raises:
        as :func:`simulator.model.launch.model_launch`;
        simulator.model.instructions.InstructionsError: a file of several kernels without
            the schedule's.
    """
    registers = registers_of(schedule, registers_per_work_item)
    if not is_sequence(schedule):
        counted = instructions.kernel(schedule.kernel_name) if instructions else None
        return launch_model.model_launch(schedule, model, accelerators=accelerators,
                                         registers_per_work_item=registers[0],
                                         stacklevel=1 + stacklevel, instructions=counted)
    counted = [instructions.kernels.get(k.kernel_name) if instructions else None
               for k in schedule.kernels]
    parts = [launch_model.model_launch(kernel, model, accelerators=accelerators,
                          registers_per_work_item=r, stacklevel=1 + stacklevel,
                          instructions=c)
             for kernel, r, c in zip(schedule.kernels, registers, counted)]
    counts, memory = add_counts([p.counts for p in parts]), add_memory([p.memory for p in parts])
    return ModelledSequence(parts, counts, memory, combine_predictions(
        [p.prediction for p in parts], counts.flop, memory.global_load_sectors),
        tuple(k.kernel_name for k in schedule.kernels))
