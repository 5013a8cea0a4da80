"""The issue ceiling of a launch: its sub-group instructions on the busiest compute unit's
schedulers.

Two forms, chosen by the device model:

* without an ``issue_rates`` table (every built-in model): the instructions
  :func:`simulator.model.prediction.issued_instructions` counts (FMAs, memory requests,
  barriers), or the build's counts where given, at the one rate
  ``warp_instructions_per_cycle_per_sub_partition``;
* with the table (``tiletraffic calibrate``'s ``issue_rate``,
  :mod:`simulator.model.issue_rates`): the instructions the compiled kernel executes, from
  the build's counts where given, else the simulator's count plus the IR estimate of the
  rest (integer and address arithmetic, loop overhead, moves:
  :func:`simulator.model.instruction_estimate.estimated_instructions`), at the table's rate
  for the launch's resident sub-groups per scheduler and its share of 128-bit local loads
  (:func:`vector_local_share`).

The table's rates are in the same instructions: the benchmark counts its own loop's FMAs,
local loads, barrier and loop-closing instructions, all its compiled loop executes.
"""
from __future__ import annotations

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk
from tiletraffic.simulator.model.device_model import DeviceModel
from tiletraffic.simulator.model.instruction_estimate import estimated_instructions
from tiletraffic.simulator.model.instructions import (ISSUE_METHOD, KernelInstructions,
                                                      issued_from_build)
from tiletraffic.simulator.observers.counters import TrafficCounts
from tiletraffic.simulator.observers.memory import MemoryCounts


def vector_local_share(schedule: S.Schedule) -> float:
    """The share of the kernel's local-memory load statements that are vector loads
    (:class:`simulator.ir.nodes.VectorLoad` of a local array) among all its local loads
    (vector loads and scalar :class:`simulator.ir.nodes.Load` s of local arrays), each
    statement counted once wherever it is; 0 without local loads."""
    vector = scalar = 0
    for stmt in schedule.body:
        for node in walk(stmt):
            if isinstance(node, S.VectorLoad) and isinstance(node.array, S.LocalArray):
                vector += 1
            elif isinstance(node, S.Load) and isinstance(node.array, S.LocalArray):
                scalar += 1
    return vector / (vector + scalar) if vector + scalar else 0.0


def sub_groups_per_scheduler(schedule: S.Schedule, model: DeviceModel,
                             work_groups_per_cu: int) -> float:
    """Resident sub-groups per scheduler of a compute unit holding ``work_groups_per_cu``
    work-groups (at least one): work-groups x ⌈work-items / ``sub_group_size``⌉ /
    ``sub_partitions_per_cu``."""
    per_group = -(-max(1, schedule.work_group_items) // model.sub_group_size)
    return max(1, work_groups_per_cu) * per_group / model.sub_partitions_per_cu


def issue_seconds(schedule: S.Schedule, counts: TrafficCounts, memory: MemoryCounts,
                  model: DeviceModel, instructions: KernelInstructions | None, share: float,
                  work_groups_per_cu: int) -> tuple[float, str | None]:
    """(seconds of the issue ceiling on the busiest compute unit, its method or None for
    the default one): the launch's instructions (the module docstring's two forms) x
    ``share`` (the busiest unit's part of the launch) on its ``sub_partitions_per_cu``
    schedulers at ``clock_hz``; with an ``issue_rates`` table, at the table's rate for
    ``work_groups_per_cu`` resident work-groups."""
    counted = launch_instructions(schedule, counts, memory, model, instructions)
    cycles_per_s = model.clock_hz * model.sub_partitions_per_cu
    if model.issue_rates is None:
        rate = model.warp_instructions_per_cycle_per_sub_partition
        return counted * share / (cycles_per_s * rate), \
            ISSUE_METHOD if instructions is not None else None
    how = "the build's counts"
    if instructions is None:
        sub_groups = -(-max(1, schedule.work_group_items) // model.sub_group_size) \
            * counts.work_groups
        counted = estimated_instructions(schedule, counted, sub_groups)
        how = "counted FMAs, requests and barriers + the IR's estimate of the rest"
    warps = sub_groups_per_scheduler(schedule, model, work_groups_per_cu)
    vector = vector_local_share(schedule)
    rate = model.issue_rates.rate(warps, vector)
    return counted * share / (cycles_per_s * rate), (
        f"issue: {how}, at the measured rate for {warps:.3g} sub-groups per scheduler and "
        f"{100 * vector:.0f}% 128-bit local loads: {rate:.3g} per cycle (issue_rates)")


def issued_instructions(schedule: S.Schedule, counts: TrafficCounts, memory: MemoryCounts,
                        model: DeviceModel) -> float:
    """Sub-group (warp) instructions of the launch that the simulator knows of: one FMA per
    2 FLOP of a sub-group (``counts.flop`` / 2 x sub-groups / work-items per work-group:
    every multiply fused with an add, as the multiply-accumulates of the built-in
    schedules are; a lone add would be one instruction for 1 FLOP, so this is a lower
    bound), one per global and local load and store request (:mod:`simulator.observers.memory`: a
    request is one instruction of one sub-group) and one per sub-group per work-group
    barrier. Address arithmetic, loop counters, branches and the moves of private values
    are not counted (the simulator does not know how the compiler emits them): a lower
    bound on what the sub-partitions issue."""
    items = max(1, schedule.work_group_items)
    sub_groups = -(-items // model.sub_group_size)
    return (counts.flop / 2 * sub_groups / items
            + memory.global_load_requests + memory.global_store_requests
            + memory.local_load_requests + memory.local_store_requests
            + counts.barriers * sub_groups)


def launch_instructions(schedule: S.Schedule, counts: TrafficCounts, memory: MemoryCounts,
                        model: DeviceModel, instructions: KernelInstructions | None) -> float:
    """The launch's sub-group instructions for the issue term: from the build's counts
    (:func:`simulator.model.instructions.issued_from_build`) when ``instructions`` is given,
    else :func:`issued_instructions`."""
    if instructions is None:
        return issued_instructions(schedule, counts, memory, model)
    items = max(1, schedule.work_group_items)
    sub_groups = -(-items // model.sub_group_size) * counts.work_groups
    return issued_from_build(instructions, counts.flop, items * counts.work_groups, sub_groups)
