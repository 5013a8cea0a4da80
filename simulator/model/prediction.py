"""Cache, DRAM and time predictions of one launch from its observation and a device model.

:func:`predict` takes a :class:`simulator.model.observation.LaunchObservation` (exact counts and
what the memory-system observers saw) and a :class:`simulator.model.device_model.DeviceModel`.
Each figure names the method that produced it in ``TrafficPrediction.methods``:

* ``l1: per-work-group footprint``: L1 misses (``l2_read_sectors``) are the distinct
  32-byte sectors each work-group loads (:class:`simulator.observers.cache.
  FootprintObserver`); ``l1: footprint shared by pairs of consecutive work-groups``: the
  same with work-groups 2j and 2j+1 sharing one L1 (``l1_sharing_work_groups = 2``, a
  guessed value whose evidence the device model file's ``ref`` gives).
* ``dram: compulsory``: every global buffer fits in L2 together, so each sector comes from
  DRAM once; otherwise ``dram: reuse distance, steady-state dispatch`` and ``dram: lock-step
  waves`` (:mod:`simulator.model.dram`).
* ``dram: fits in L2``: written lines stay in L2 until after the kernel; otherwise
  :data:`WRITE_BACK_METHOD`: dirty output lines evicted during the kernel
  (:func:`simulator.model.dram.dram_writes_write_back`, with the copies each L2 partition
  keeps, :func:`simulator.model.dram.partition_copies`). Dirty lines that other kernels
  left in L2 are not modelled.
* ``time: ceilings + barrier latency by mean value analysis + tail + launch overhead``:
  the largest of the ceilings (the roofline model: Williams, Waterman and Patterson,
  "Roofline", CACM 52(4), 2009) ``fp32_s`` (FLOPs at the FP32 rate), ``dram_s``, ``l2_s``
  (L2→L1 bytes), ``l1_s`` (L1 wavefronts, :func:`l1_cycles`; strided requests at the
  calibrated per-line costs where the model has them, :mod:`simulator.observers.strides`),
  ``l1_requests_s`` (the L1 tag stage), ``issue_s`` (:func:`issued_instructions`, or the
  build's counts where given, :func:`launch_instructions`, on the unit's schedulers; with
  the device model's measured ``issue_rates``, the instructions the compiled kernel
  executes at the rate of the launch's resident sub-groups per scheduler:
  :mod:`simulator.model.issue_term`) and,
  where the model has it, ``l1_strided_dram_s`` (:func:`strided_fill_s`); per-compute-unit
  resources are charged for the unit with the most work-groups (⌈work-groups / compute
  units⌉). Added to it: the latency of barrier intervals with global loads that the
  resident work-groups cannot hide (``barrier_latency_s``,
  :func:`simulator.model.queueing.exposed_latency_s` with the delay of
  :func:`interval_latency_s`), the tail of a unit's last work-groups (``tail_s``,
  :func:`simulator.model.queueing.tail_latency_s`) and the launch overhead.

Units are in the names (``_bytes``, ``_sectors``, ``_s``).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from tiletraffic.simulator.observers.cache import FootprintObserver
from tiletraffic.simulator.observers.counters import TrafficCounts
from tiletraffic.simulator.engine.limits import LimitError
from tiletraffic.simulator.model.device_model import DeviceModel
from tiletraffic.simulator.model.instructions import KernelInstructions
from tiletraffic.simulator.model.issue_term import (issue_seconds, issued_instructions,
                                                    launch_instructions)
from tiletraffic.simulator.model.dram import (BufferReads, dram_reads_lockstep,
                                              dram_reads_steady_state, dram_writes_write_back)
from tiletraffic.simulator.observers.memory import MemoryCounts
from tiletraffic.simulator.model.observation import LaunchObservation
from tiletraffic.simulator.model.queueing import exposed_latency_s, tail_latency_s
from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.observers.strides import (STRIDED_DRAM_METHOD, STRIDED_METHOD,
                                                     StridedRequests, StridedRequestWarning,
                                                     strided_declaration,
                                                     strided_dram_fill_cycles,
                                                     strided_l1_cycles)


WRITE_BACK_METHOD = "dram: write-back of output lines evicted before the kernel ends"
"""``methods["dram_write_bytes"]`` when the buffers do not fit in L2 together."""

ADDED_TIME_TERMS = ("barrier_latency_s", "tail_s", "launch_overhead_s")
"""The time terms added to the largest ceiling (:attr:`TrafficPrediction.time_terms_s`)."""

BOUND_NAMES = {"fp32": "FP32", "dram": "DRAM", "l2": "L2", "l1": "L1",
               "l1_requests": "L1 requests", "issue": "issue",
               "l1_strided_dram": "L1 strided DRAM fills"}
""":attr:`TrafficPrediction.bound` (a ceiling's key without ``_s``, as results files hold
it) -> the name every table and line of text shows."""


def bound_name(bound: str) -> str:
    """The shown name of ``bound`` (:data:`BOUND_NAMES`; any other key with its underscores
    as spaces): ``"l1"`` -> ``"L1"``."""
    return BOUND_NAMES.get(bound, bound.replace("_", " "))


def term_name(term: str) -> str:
    """The shown name of the time term ``term`` (a key of
    :attr:`TrafficPrediction.time_terms_s`, unit suffix ``_s``): a ceiling's
    :func:`bound_name`, an added term's words: ``"l1_s"`` -> ``"L1"``,
    ``"barrier_latency_s"`` -> ``"barrier latency"``."""
    return bound_name(term.removesuffix("_s"))


METHOD_NAMES = {"l2_read_sectors": "L2 -> L1 sectors", "dram_read_bytes": "DRAM read bytes",
                "dram_read_bytes_lockstep": "DRAM read bytes (lock-step)",
                "dram_write_bytes": "DRAM write bytes", "predicted_time_s": "predicted time",
                "issue_s": "issue term", "l1_strided_requests": "L1 strided requests",
                "l1_strided_dram": "L1 strided DRAM fills"}
"""A key of :attr:`TrafficPrediction.methods` (the figure a method produced) -> the name
every line of text shows."""

METHOD_LEVELS = ("l1", "dram", "time", "issue")
"""The model a method string names before its first ``": "`` (``"dram: compulsory"``)."""


def method_text(key: str, method: str) -> str:
    """One entry of :attr:`TrafficPrediction.methods` as text shows it: the figure's name
    (:data:`METHOD_NAMES`; any other key with its underscores as spaces), then the method
    without the model it names first, which the figure's name already says:
    ``("dram_read_bytes", "dram: compulsory")`` -> ``"DRAM read bytes: compulsory"``."""
    level, sep, rest = method.partition(": ")
    shown = rest if sep and level in METHOD_LEVELS else method
    return f"{METHOD_NAMES.get(key, key.replace('_', ' '))}: {shown}"


@dataclass
class TrafficPrediction:
    """Predicted cache/DRAM traffic and time of one launch on one device model."""

    device_model: str
    l2_read_sectors: int
    l1_load_hit_rate: float
    dram_read_bytes: int
    dram_write_bytes: int
    """Bytes of output the L2 writes back to DRAM during the kernel: the expected value of
    the write-back model, rounded to a byte, so in general not a whole number of lines.
    The output's other lines are still in the L2 when the kernel ends and reach DRAM after
    it, which the kernel's DRAM writes (Nsight Compute's ``dram__bytes_write``) do not
    count; ``tiletraffic model`` shows the value in whole lines with that count."""
    l1_wavefronts: int
    time_terms_s: dict[str, float]
    """Seconds. The ceilings ``fp32_s``, ``dram_s``, ``l2_s``, ``l1_s``, ``l1_requests_s`` and
    ``issue_s``, and ``l1_strided_dram_s`` where the device model has strided requests'
    fills from DRAM (the largest names :attr:`bound`), then the terms added to it:
    ``barrier_latency_s``,
    ``tail_s`` and ``launch_overhead_s``. ``predicted_time_s`` = the largest ceiling + the
    three added terms."""
    predicted_time_s: float
    bound: str
    arithmetic_intensity_flop_per_byte: float
    resident_work_groups_per_cu: int
    waves: float
    work_groups_per_cu: int = 1
    """Work-groups the busiest compute unit gets (⌈work-groups / compute units used⌉)."""
    dram_read_bytes_lockstep: int = 0
    barrier_intervals_per_cu: float = 0.0
    """Barrier intervals with global loads on the busiest compute unit (the mean value
    analysis' and the tail's intervals)."""
    registers_per_work_item: int | None = None
    """The registers per work-item the occupancy was computed with (None: not modelled)."""
    methods: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def l2_miss_fraction(model: DeviceModel, dram_read_bytes: float, l2_read_sectors: float
                     ) -> float:
    """The launch's L2 miss fraction: ``dram_read_bytes`` / (``l2_read_sectors`` x
    ``sector_bytes``), clipped to 0..1 (0 without L2 reads)."""
    if l2_read_sectors <= 0:
        return 0.0
    return min(1.0, max(0.0, dram_read_bytes / (l2_read_sectors * model.sector_bytes)))


def strided_fill_s(strided: StridedRequests | None, footprint: FootprintObserver,
                   model: DeviceModel, dram_read_bytes: float, l2_read_sectors: float,
                   sub_groups_per_cu: int) -> float | None:
    """Seconds the launch's compute units together need to fill from DRAM the L1 lines its
    strided requests load (each array's L1 misses, ``footprint``'s sectors / sectors per
    line, times the share of its load requests that are strided,
    :meth:`simulator.observers.strides.StridedRequests.strided_share`; the part from DRAM:
    :func:`l2_miss_fraction`), each unit with
    ``sub_groups_per_cu`` resident sub-groups (:func:`simulator.observers.strides.
    strided_dram_fill_cycles`); the caller scales it to the busiest unit. ``None`` when the
    device model lacks ``strided_dram_fill_sub_group_cycles_per_line`` (0) or the launch
    has no strided requests."""
    cycles = model.strided_dram_fill_sub_group_cycles_per_line
    if cycles <= 0 or not strided or not strided.arrays:
        return None
    lines = (sum(footprint.sectors_by_buffer.get(a, 0.0) * strided.strided_share(a)
                 for a in sorted(strided.arrays))
             * model.sector_bytes / model.line_bytes)
    miss = l2_miss_fraction(model, dram_read_bytes, l2_read_sectors)
    return strided_dram_fill_cycles(lines, miss, cycles, sub_groups_per_cu) / model.clock_hz


def interval_latency_s(model: DeviceModel, dram_read_bytes: float, l2_read_sectors: float,
                       load_phases: float) -> float:
    """The delay that ends a barrier interval with global loads: the interval waits for its
    slowest load, which comes from DRAM if any of the interval's s = ``l2_read_sectors`` /
    ``load_phases`` sectors read from L2 misses there. With f = ``dram_read_bytes`` / (L2
    sectors x ``sector_bytes``) the launch's L2 miss fraction, taken as independent per
    sector, that happens with probability p = 1 - (1 - f)^s, and the delay is
    ``memory_latency_s`` + p x (``memory_latency_dram_s`` - ``memory_latency_s``)
    (tiletraffic's model; the two delays are ``tiletraffic calibrate``'s
    ``staging_round_trip`` over an L2-resident buffer and over one more than 4 x the L2). A model
    without ``memory_latency_dram_s`` (0) gives ``memory_latency_s``."""
    if model.memory_latency_dram_s <= 0 or load_phases <= 0 or l2_read_sectors <= 0:
        return model.memory_latency_s
    miss = l2_miss_fraction(model, dram_read_bytes, l2_read_sectors)
    sectors = l2_read_sectors / load_phases
    p = 1.0 - (1.0 - miss) ** sectors
    return model.memory_latency_s + p * (model.memory_latency_dram_s - model.memory_latency_s)


def buffer_reads(schedule: Schedule, footprint: FootprintObserver, model: DeviceModel,
                 offsets: tuple[dict[str, int | None], dict[str, int | None]] = ({}, {})
                 ) -> dict[str, BufferReads]:
    """What the DRAM model needs of each loaded buffer: bytes L2 is asked for (the
    footprint's sectors), the buffer's size and its load offsets between neighbouring
    work-groups in dimensions 0 and 1 (:class:`simulator.model.dram.BufferReads`)."""
    p = schedule.param_values
    sizes = {a.name: int(np.prod([p[s] for s in a.shape])) * a.element_bytes
             for a in schedule.arrays}
    return {name: BufferReads(sectors * model.sector_bytes, sizes[name],
                              offsets[0].get(name), offsets[1].get(name),
                              footprint.own_sectors_by_buffer[name] * model.sector_bytes)
            for name, sectors in footprint.sectors_by_buffer.items()}


def check_resident(schedule: Schedule, model: DeviceModel, registers: int | None) -> None:
    """Refuse a launch none of whose work-groups can be resident on a compute unit.

    Raises:
        simulator.engine.limits.LimitError: one work-group of ``schedule`` needs more work-items,
            local memory or (``registers`` per work-item, when given) registers than a
            compute unit of ``model`` has; the message names the value and the limit.
    """
    problem = model.work_group_fit_problem(schedule.work_group_items,
                                           schedule.local_mem_bytes, registers)
    if problem:
        raise LimitError(f"{schedule.family}: {problem}: no work-group can be resident, so "
                         "there is no time to predict")


def predict(observation: LaunchObservation, device_model: DeviceModel,
            registers: int | None = None, *, stacklevel: int = 2,
            instructions: KernelInstructions | None = None) -> TrafficPrediction:
    """Combine the exact counts of ``observation`` with ``device_model`` into cache, DRAM
    and time predictions (the methods: the module docstring).

    Args:
        observation: the launch as simulated (:func:`simulator.model.observation.observe_launch`):
            its schedule, counts, footprint, barrier intervals with global loads, load
            offsets between neighbouring work-groups (for the DRAM model) and strided
            requests; when those requests' lines are a tenth or more of the L1 wavefronts,
            ``methods["l1_strided_requests"]`` declares the L1 time outside what the model
            predicts and a :class:`simulator.observers.strides.StridedRequestWarning` says so.
        device_model: the device's values.
        registers: registers per work-item, which limit the resident work-groups
            (:meth:`DeviceModel.resident_work_groups_per_cu`); ``None``: not modelled.
        stacklevel: as :func:`warnings.warn`'s for the warning; 2 names the caller's line.
        instructions: the build's counts for the issue term (:func:`launch_instructions`;
            ``methods["issue_s"]`` says so); ``None``: :func:`issued_instructions`, or with
            the model's ``issue_rates`` that count plus the IR's estimate of the rest
            (:mod:`simulator.model.issue_term`).

    Raises:
        simulator.engine.limits.LimitError: no work-group can be resident on a compute unit (too
            many work-items, local memory or registers for one); the message names the
            value and the limit.
    """
    schedule, counts, memory = observation.schedule, observation.counts, observation.memory
    footprint, model = observation.footprint, device_model
    load_phases = observation.load_phases
    strided, registers_per_work_item = observation.strides, registers
    p = schedule.param_values
    sizes = {a.name: int(np.prod([p[s] for s in a.shape])) * a.element_bytes
             for a in schedule.arrays}
    inputs = sum(v for a, v in sizes.items() if schedule.array(a).is_input)
    outputs = sum(v for a, v in sizes.items() if schedule.array(a).is_output)
    l2_read_sectors = int(round(sum(footprint.sectors_by_buffer.values())))
    hit = 1 - l2_read_sectors / memory.global_load_sectors if memory.global_load_sectors else 0.0
    methods = {"l2_read_sectors": "l1: per-work-group footprint" if footprint.sharing == 1
               else "l1: footprint shared by pairs of consecutive work-groups"}
    resident = model.resident_work_groups_per_cu(schedule.work_group_items,
                                                 schedule.local_mem_bytes,
                                                 registers_per_work_item)
    if resident < 1:
        check_resident(schedule, model, registers_per_work_item)
    dram_read, dram_lockstep, dram_write = _dram_bytes(observation, model, resident, inputs,
                                                       outputs, methods)
    l1_wavefronts = (memory.global_load_lines + memory.global_store_lines
                     + memory.local_load_wavefronts + memory.local_store_wavefronts
                     + model.barrier_wavefronts_per_work_group * counts.barriers)
    strided_cycles = strided_l1_cycles(strided, model.l1_strided_cycles_per_line,
                                       model.l1_strided_cycles_per_busiest_bank_line) \
        if strided and strided.modelled_lines else None
    declared = strided_declaration(strided, l1_wavefronts) \
        if strided and strided_cycles is None else None
    if strided_cycles is not None:
        methods["l1_strided_requests"] = STRIDED_METHOD
    if declared:
        methods["l1_strided_requests"] = declared
        warnings.warn(f"{schedule.kernel_name}: {declared}", StridedRequestWarning,
                      stacklevel=stacklevel)
    active = model.active_compute_units(counts.work_groups)
    # per-compute-unit resources are charged for the compute unit with the most work-groups
    # (work-groups are indivisible: a launch of 133 on 132 units puts two on one of them)
    per_cu_groups = -(-counts.work_groups // active)
    share = per_cu_groups / max(1, counts.work_groups)
    terms = {
        "fp32_s": counts.flop / model.fp32_flop_per_s,
        "dram_s": (dram_read + dram_write) / model.dram_bytes_per_s,
        "l2_s": l2_read_sectors * model.sector_bytes / model.l2_bytes_per_s,
        "l1_s": l1_cycles(l1_wavefronts,
                          strided.modelled_lines if strided_cycles is not None else 0,
                          strided_cycles or 0.0, model) * share / model.clock_hz,
        "l1_requests_s": (memory.global_load_requests + memory.global_store_requests) * share
        / (model.clock_hz * model.l1_requests_per_cycle_per_cu),
    }
    customers = min(resident, per_cu_groups)
    terms["issue_s"], issue_method = issue_seconds(schedule, counts, memory, model,
                                                   instructions, share, customers)
    methods.update({"issue_s": issue_method} if issue_method else {})
    # at least one work-group's sub-groups: resident is 0 when one work-group does not fit
    # (estimated registers), which the latency terms also count as one
    fill = strided_fill_s(strided, footprint, model, dram_read, l2_read_sectors,
                          max(1, customers)
                          * -(-max(1, schedule.work_group_items) // model.sub_group_size))
    if fill is not None:
        terms["l1_strided_dram_s"] = fill * share
        methods["l1_strided_dram"] = STRIDED_DRAM_METHOD
    bound = max(terms, key=terms.get)
    intervals = load_phases * share   # barrier intervals with global loads on that unit
    latency = interval_latency_s(model, dram_read, l2_read_sectors, load_phases)
    terms["barrier_latency_s"] = exposed_latency_s(terms[bound], intervals, customers, latency)
    terms["tail_s"] = tail_latency_s(terms[bound], intervals, per_cu_groups, customers, latency)
    terms["launch_overhead_s"] = model.launch_overhead_s
    methods["predicted_time_s"] = ("time: ceilings + barrier latency by mean value analysis "
                                   "+ tail + launch overhead")
    waves = counts.work_groups / max(1, resident * model.compute_units)
    return TrafficPrediction(
        device_model=model.name, l2_read_sectors=l2_read_sectors, l1_load_hit_rate=hit,
        dram_read_bytes=dram_read, dram_write_bytes=dram_write, l1_wavefronts=l1_wavefronts,
        time_terms_s=terms,
        predicted_time_s=terms[bound] + sum(terms[k] for k in ADDED_TIME_TERMS),
        bound=bound.removesuffix("_s"),
        arithmetic_intensity_flop_per_byte=counts.flop / max(1, dram_read + dram_write),
        resident_work_groups_per_cu=resident, waves=waves, work_groups_per_cu=per_cu_groups,
        dram_read_bytes_lockstep=dram_lockstep, barrier_intervals_per_cu=intervals,
        registers_per_work_item=registers_per_work_item, methods=methods)


def _dram_bytes(observation: LaunchObservation, model: DeviceModel, resident: int,
                inputs: int, outputs: int, methods: dict) -> tuple[int, int, int]:
    """``(dram_read, dram_read_lockstep, dram_write)`` bytes of the launch (the module
    docstring's DRAM methods), each method named in ``methods``: compulsory reads where the
    buffers fit in L2, else reuse distances under steady-state and lock-step dispatch;
    write-back of the outputs."""
    schedule, counts = observation.schedule, observation.counts
    footprint, offsets = observation.footprint, observation.offsets
    if inputs + outputs <= model.l2_bytes:
        dram_read = dram_lockstep = inputs
        methods["dram_read_bytes"] = "dram: compulsory"
    else:
        buffers = buffer_reads(schedule, footprint, model, offsets)
        shape = (counts.work_groups, schedule.num_groups[0])
        concurrent = resident * model.compute_units
        l2 = (model.l2_bytes, concurrent, model.l2_associativity)
        dram_read = int(round(dram_reads_steady_state(buffers, outputs, *shape, *l2)))
        dram_lockstep = int(round(dram_reads_lockstep(buffers, outputs, *shape, *l2)))
        methods["dram_read_bytes"] = "dram: reuse distance, steady-state dispatch"
        methods["dram_read_bytes_lockstep"] = "dram: lock-step waves"
    dram_write = int(round(dram_writes_write_back(
        buffer_reads(schedule, footprint, model, offsets), outputs, counts.work_groups,
        schedule.num_groups[0], model.l2_bytes, model.l2_associativity, model.l2_partitions)))
    methods["dram_write_bytes"] = (WRITE_BACK_METHOD if dram_write else
                                   "dram: fits in L2 (written back after the kernel)")
    return dram_read, dram_lockstep, dram_write


def l1_cycles(l1_wavefronts: int, modelled_strided_lines: int, strided_cycles: float,
              model: DeviceModel) -> float:
    """Cycles of the launch's L1 wavefronts (all compute units together): one wavefront per
    ``1 / l1_wavefronts_per_cycle_per_cu`` cycles, except the ``modelled_strided_lines``
    of strided requests whose cost the device model gives, which cost ``strided_cycles``
    (:func:`simulator.observers.strides.strided_l1_cycles`) instead (0 and 0: none modelled)."""
    return ((l1_wavefronts - modelled_strided_lines) / model.l1_wavefronts_per_cycle_per_cu
            + strided_cycles)
