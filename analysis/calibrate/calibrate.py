"""``tiletraffic calibrate``: a device model measured by microbenchmarks.

Each benchmark (kernels: ``gpu/devices/templates/calibrate.cl``, launched and checked by
:mod:`tiletraffic.gpu.devices.microbench`) sets one :class:`DeviceModel` field, marked ``measured``
with a ``[references]`` entry naming the benchmark, its size and the device:

============== ======================================= =====================================
benchmark      what is timed                           field
============== ======================================= =====================================
dram_read      reading a buffer of 8 x the L2          dram_bytes_per_s
dram_write     writing it                              (none: the model has one DRAM rate)
l2_size        re-read passes over footprints of 2-256 MiB l2_bytes (the capacity where the
               (x 2^(1/4) apart)                       rate falls below 1.5 x DRAM's)
l2_read        passes over a buffer of half the L2     l2_bytes_per_s
local_read     conflict-free local-memory word reads   l1_wavefronts_per_cycle_per_cu
fp32_fma       8 independent FMA chains per work-item  fp32_flop_per_s
pointer_chase  dependent loads over the DRAM buffer    (none: the unloaded latency of one
                                                       load; reported)
staging_round  one work-group per compute unit: global memory_latency_s (the delay of a
_trip          load, local store, barrier, local load, barrier interval in the time model)
               barrier, each step after the last, over
               an L2-resident buffer
staging_round  the same over the largest power of two  memory_latency_dram_s (the delay of
_trip_dram     within dram_read's buffer (more than 4  an interval one of whose loads
               x the L2): every load from DRAM         misses L2)
strided_read   one work-group per compute unit, each   l1_strided_cycles_per_line and
               work-item reading its own row, rows     l1_strided_cycles_per_busiest_bank_line
               4096 + d words apart (d = 0, 16, 8, 4,  (a least-squares fit of the cycles
               2, 1: the rows' words in 1..32 banks)   per request, :func:`strided_fit`)
strided_read_  the same at d = 0 and 1 with every row  strided_dram_fill_sub_group_cycles_
dram           read once (lines from DRAM)             per_line (d = 1's cycles per request
                                                       x sub-groups / lines filled per
                                                       request; d = 0 reported)
strided_read_  the same from DRAM at d = 0 with a      (none: reported, the cycles of x
x              broadcast x[k] per step, from global    from global memory over x from local
               or from local memory                    memory)
register_tile  16 x 16 work-items, 8 x 8 sums each:    warp_instructions_per_cycle_per_
               the inner loop of gemm-register-blocked sub_partition (the rate, in the
               TM = TN = 8, BK = 8 from local tiles    instructions the time model counts:
               (barrier, 8 x (16 local loads + 64      FMAs, local loads, barriers)
               FMAs) per step)
issue_rate     one work-group per compute unit of 1,   issue_rates (a table: the rate by
               2, 3, 4 and 8 sub-groups per scheduler: sub-groups per scheduler, for
               8 x 8 sums per work-item from 4 float4  128-bit and 32-bit local loads;
               or 16 scalar local loads + 64 FMAs per  :mod:`.issue_rate`)
               depth, a barrier per 8 depths
empty_kernel   a kernel that does nothing              launch_overhead_s
barrier        work-group barriers in a loop           barrier_wavefronts_per_work_group
============== ======================================= =====================================

Every other value keeps its source in the OpenCL-queried model
(:func:`tiletraffic.gpu.devices.device_models.model_from_opencl`): queried or from the
built-in model it completes. Times are medians over the repeated launches; latency and
barrier cost are differences of two lengths (2n and n), so launch overhead cancels.
"""
from __future__ import annotations

import math
import statistics

import numpy as np
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Callable

from tiletraffic.simulator.model.device_model import DeviceModel, ValueSource
from tiletraffic.analysis.calibrate.measurement import Measurement

MIB = 2**20


BENCHMARKS = ("dram_read", "dram_write", "l2_size", "l2_read", "local_read", "fp32_fma",
              "pointer_chase", "staging_round_trip", "staging_round_trip_dram",
              "strided_read", "register_tile", "issue_rate", "empty_kernel", "barrier")
"""The benchmarks :func:`measure` runs, in order (the names its ``progress`` receives;
``strided_read`` includes ``strided_read_dram`` and ``strided_read_x``)."""


class CalibrationError(ValueError):
    """The device cannot run a benchmark (too little memory): raised by :func:`plan_sizes`
    before any benchmark runs. (Unusable times leave the value unset instead: see
    ``Measurement.why_unmapped``.)"""


# ------------------------------------------------------------------ arithmetic (unit-tested)

def bytes_per_s(nbytes: float, seconds: float) -> float:
    """Bandwidth: bytes moved / seconds."""
    return nbytes / seconds


def fma_flop_per_s(work_items: int, fma_per_work_item: int, seconds: float) -> float:
    """FP32 rate: 2 flop per FMA (a multiply and an add) x FMAs / seconds."""
    return 2 * work_items * fma_per_work_item / seconds


def per_step_s(long_s: float, short_s: float, extra_steps: int) -> float:
    """Seconds per step from two runs that differ by ``extra_steps`` steps (what both runs
    share, the launch, cancels)."""
    return (long_s - short_s) / extra_steps


def _per_extra_step_s(run: Callable[[int], list[float]], n: int) -> float:
    """:func:`per_step_s` of the median times of ``run(n)`` and then ``run(2 n)``."""
    short = statistics.median(run(n))
    return per_step_s(statistics.median(run(2 * n)), short, n)


def barrier_s_per_work_group(long_s: float, short_s: float, extra_barriers: int,
                             work_groups: int, compute_units: int) -> float:
    """Seconds one compute unit spends on one barrier of one work-group: the time the
    ``extra_barriers`` more barriers take, spread over ``work_groups`` work-groups that run
    on ``min(compute_units, work_groups)`` compute units at once."""
    active = min(compute_units, work_groups)
    return per_step_s(long_s, short_s, extra_barriers) * active / work_groups


def issue_rate(instructions: float, seconds: float, clock_hz: float, compute_units: int,
               sub_partitions_per_cu: int) -> float:
    """Sub-group instructions per cycle per sub-partition: ``instructions`` (as the time
    model counts them) in ``seconds`` on ``compute_units`` x ``sub_partitions_per_cu``
    schedulers at ``clock_hz`` (the model's issue ceiling,
    :func:`tiletraffic.simulator.model.prediction.issued_instructions`, divides by the same)."""
    return instructions / (seconds * clock_hz * compute_units * sub_partitions_per_cu)


def l1_wavefronts_per_cycle(local_bytes_per_s: float, compute_units: int, clock_hz: float,
                            line_bytes: int) -> float:
    """The model's L1/local rate is ``compute_units x clock_hz x rate x line_bytes`` bytes/s
    (:attr:`DeviceModel.l1_bytes_per_s`); the rate that gives the measured bandwidth."""
    return local_bytes_per_s / (compute_units * clock_hz * line_bytes)


def barrier_wavefronts(barrier_s: float, local_bytes_per_s: float, compute_units: int,
                       line_bytes: int) -> int:
    """A barrier's cost in the model's unit: L1 wavefronts of one compute unit, whose rate is
    ``local_bytes_per_s / compute_units / line_bytes`` wavefronts per second (rounded)."""
    return round(barrier_s * local_bytes_per_s / (compute_units * line_bytes))


STRIDE_OFFSETS_WORDS = (0, 16, 8, 4, 2, 1)
"""``strided_read``'s row strides beyond a multiple of the bank count: the 32 work-items'
words then fall in 1, 2, 4, 8, 16 and 32 distinct banks."""


def distinct_banks(offset_words: int, lanes: int = 32, banks: int = 32) -> int:
    """Distinct banks of ``lanes`` words ``offset_words`` (mod ``banks``) apart:
    ``banks / gcd(offset, banks)`` at most ``lanes``; 1 for an offset of 0."""
    return min(lanes, banks // math.gcd(offset_words % banks, banks))


def strided_fit(lines: int, busiest_bank_lines, cycles_per_request) -> tuple[float, float]:
    """(cycles per line, cycles per line of the busiest bank): the least-squares fit of
    ``cycles = a * lines + b * busiest`` to strided requests of ``lines`` lines each whose
    busiest bank holds ``busiest_bank_lines`` of them (one per measured stride).

    The model of a strided request's L1 time is this module's (tiletraffic's), fitted to
    the ``strided_read`` microbenchmark only: it charges a request reading lines a row
    stride apart as if the lines' words were read one per bank and lines in the same bank
    were serialized. NVIDIA does not document it.

    Raises:
        ValueError: fewer than two strides, lengths differ, or all strides have the same
            busiest bank (the two terms cannot be told apart).
    """
    busiest = np.asarray(busiest_bank_lines, dtype=float)
    cycles = np.asarray(cycles_per_request, dtype=float)
    if busiest.shape != cycles.shape or busiest.size < 2 or np.ptp(busiest) == 0:
        raise ValueError(f"a strided fit needs two or more strides with different busiest "
                         f"banks and one time each, got {busiest.tolist()} and "
                         f"{cycles.tolist()}")
    design = np.column_stack([np.full(busiest.size, float(lines)), busiest])
    (a, b), *_ = np.linalg.lstsq(design, cycles, rcond=None)
    return float(a), float(b)


L2_SIZE_THRESHOLD = 1.5
"""The re-read rate, in multiples of the DRAM read rate, that a footprint still served by
L2 reaches (:func:`l2_capacity_from_sweep`)."""


def l2_capacity_from_sweep(footprints_bytes, bytes_per_s, dram_bytes_per_s: float,
                           threshold: float = L2_SIZE_THRESHOLD) -> float | None:
    """The footprint at which re-reading falls below ``threshold`` × the DRAM rate: between
    the largest footprint still at or above it and the next (which must be below), linear in
    the rate and logarithmic in the footprint. Searched from the largest footprint down, so
    that a faster plateau of smaller footprints (L1) does not matter. With hashed sets the
    hit fraction there is about one half (``threshold`` = 1.5 with an L2 2.5 times faster
    than DRAM: a rate of 1.5 needs 56% hits). ``None`` when no footprint reaches the
    threshold or the largest one still does.

    Args:
        footprints_bytes: ascending; bytes_per_s: the re-read rate at each.

    Raises:
        ValueError: lengths differ, fewer than two footprints, or not ascending.
    """
    f = np.asarray(footprints_bytes, dtype=float)
    b = np.asarray(bytes_per_s, dtype=float)
    if f.shape != b.shape or f.size < 2 or np.any(np.diff(f) <= 0):
        raise ValueError(f"a sweep needs two or more ascending footprints with one rate each, "
                         f"got {f.size} footprints and {b.size} rates")
    limit = threshold * dram_bytes_per_s
    above = np.flatnonzero(b >= limit)
    if above.size == 0 or above[-1] == f.size - 1:
        return None
    i = int(above[-1])
    t = (b[i] - limit) / (b[i] - b[i + 1])
    return float(np.exp(np.log(f[i]) + t * (np.log(f[i + 1]) - np.log(f[i]))))


# ------------------------------------------------------------------ sizes

@dataclass(frozen=True)
class Sizes:
    """What each benchmark runs (bytes, counts); :func:`plan_sizes`."""

    dram_bytes: int
    l2_footprint_bytes: int
    l2_passes: int
    stream_work_items: int
    work_groups: int
    local_iters: int
    fma_work_items: int
    fma_iters: int
    chase_elems: int
    chase_steps: int
    barrier_count: int
    repeat: int
    staging_bytes: int = 16
    staging_steps: int = 1
    staging_dram_bytes: int = 16
    strided_length: int = 2
    strided_base_words: int = 32
    register_tile_steps: int = 1
    issue_rate_steps: int = 1
    l2_sweep_footprints: tuple[int, ...] = ()
    l2_sweep_bytes: int = 0


def plan_sizes(compute_units: int, l2_bytes: int, global_mem_bytes: int, max_alloc_bytes: int,
               local_mem_bytes: int, local_size: int, quick: bool) -> Sizes:
    """Sizes from the device's queried memory sizes: DRAM footprint ``max(256 MiB, 8 x
    l2_bytes)`` (the pointer chase's: the same, at most 1 GiB), L2 footprint ``l2_bytes /
    2``; ``quick``: 8 MiB (chase 1 MiB) and at most 256 KiB, few iterations (seconds on a
    CPU; the numbers then say little).

    Raises:
        CalibrationError: a buffer does not fit ``max_alloc_bytes``
            (CL_DEVICE_MAX_MEM_ALLOC_SIZE) or a quarter of ``global_mem_bytes``, or the local array (16 KiB) does not fit
            ``local_mem_bytes``; the message names the benchmark, the need and the limit.
    """
    from tiletraffic.gpu.devices.microbench import LOCAL_FLOATS

    dram = 8 * MIB if quick else max(256 * MIB, 8 * l2_bytes)
    limit = min(max_alloc_bytes, global_mem_bytes // 4)
    if dram > limit:
        why = "8 MiB" if quick else f"max(256 MiB, 8 x the L2 of {l2_bytes} bytes)"
        raise CalibrationError(
            f"dram_read needs one buffer of {dram} bytes ({why}), "
            f"more than this device allows ({limit} bytes: the smaller of "
            f"CL_DEVICE_MAX_MEM_ALLOC_SIZE {max_alloc_bytes} and a quarter of "
            f"CL_DEVICE_GLOBAL_MEM_SIZE {global_mem_bytes})")
    if LOCAL_FLOATS * 4 > local_mem_bytes:
        raise CalibrationError(f"local_read needs {LOCAL_FLOATS * 4} bytes of local memory, "
                               f"the device has {local_mem_bytes} (CL_DEVICE_LOCAL_MEM_SIZE)")
    l2_foot = max(16, (min(l2_bytes // 2, 256 * 1024) if quick else l2_bytes // 2) // 16 * 16)
    per_cu = 256 if quick else 2048
    items = compute_units * -(-per_cu // local_size) * local_size
    if quick:
        sweep = tuple(64 * 1024 * 2**i for i in range(7))          # 64 KiB .. 4 MiB
    else:                                                          # 2 MiB .. 256 MiB
        sweep = tuple(int(2 * MIB * 2 ** (i / 4)) // 16 * 16 for i in range(29))
    sweep = tuple(f for f in sweep if f <= dram)
    return Sizes(l2_sweep_footprints=sweep, l2_sweep_bytes=16 * MIB if quick else 2**30,
                 dram_bytes=dram, l2_footprint_bytes=l2_foot,
                 l2_passes=8 if quick else max(4, dram // l2_foot),
                 stream_work_items=items, work_groups=compute_units * 4,
                 local_iters=2000 if quick else 100_000,
                 fma_work_items=items, fma_iters=256 if quick else 16384,
                 chase_elems=(MIB if quick else min(dram, 2**30)) // 4,
                 chase_steps=20_000 if quick else 100_000,
                 barrier_count=100 if quick else 1000, repeat=3 if quick else 10,
                 staging_bytes=16 * 2 ** int(math.log2(max(1, l2_foot // 16))),
                 staging_steps=200 if quick else 20_000,
                 staging_dram_bytes=16 * 2 ** int(math.log2(max(1, dram // 16))),
                 strided_length=64 if quick else 2048,
                 strided_base_words=128 if quick else 4096,
                 register_tile_steps=16 if quick else 2048,
                 issue_rate_steps=8 if quick else 1024)


# ------------------------------------------------------------------ measuring

def _mib(nbytes: int) -> str:
    return f"{nbytes / MIB:g} MiB" if nbytes >= MIB else f"{nbytes / 1024:g} KiB"


def measure(target, base: DeviceModel, sizes: Sizes,
            progress: Callable[[str], None] = lambda name: None) -> list[Measurement]:
    """Run every benchmark on ``target``; ``progress(name)`` before each.

    Raises:
        tiletraffic.gpu.runtime.launch.TiletrafficGpuError: a build, launch or result check failed.
    """
    from tiletraffic.gpu.devices import microbench as mb

    med = statistics.median
    s, r, cu = sizes, sizes.repeat, base.compute_units
    stat = f"median of {r}"
    out = []
    progress("dram_read")
    t = med(mb.read_sum(target, s.dram_bytes, 1, s.stream_work_items, r))
    dram_read = bytes_per_s(s.dram_bytes, t)
    out.append(Measurement("dram_read", f"stream of {_mib(s.dram_bytes)}, {stat}", dram_read,
                           "B/s", "dram_bytes_per_s", dram_read))
    progress("dram_write")
    t = med(mb.write_fill(target, s.dram_bytes, s.stream_work_items, r))
    out.append(Measurement("dram_write", f"stream of {_mib(s.dram_bytes)}, {stat}",
                           bytes_per_s(s.dram_bytes, t), "B/s",
                           why_unmapped="the model has one DRAM rate (reads)"))
    l2_foot, l2_passes = s.l2_footprint_bytes, s.l2_passes
    if len(s.l2_sweep_footprints) >= 2:
        progress("l2_size")
        size = _l2_size(target, s, dram_read)
        out.append(size)
        if size.field == "l2_bytes":  # read at half the measured L2, not the queried one
            l2_foot = max(16, int(size.value) // 2 // 16 * 16)
            l2_passes = max(4, s.l2_sweep_bytes // l2_foot)  # as many bytes as a sweep step
    progress("l2_read")
    t = med(mb.read_sum(target, l2_foot, l2_passes, s.stream_work_items, r))
    l2 = bytes_per_s(l2_foot * l2_passes, t)
    out.append(Measurement("l2_read", f"{l2_passes} passes over {_mib(l2_foot)}"
                           f", {stat}", l2, "B/s", "l2_bytes_per_s", l2))
    progress("local_read")
    local_items = s.work_groups * mb.local_size(target)
    t = med(mb.local_read(target, s.local_iters, s.work_groups, r))
    local = bytes_per_s(4 * local_items * s.local_iters, t)
    out.append(Measurement(
        "local_read", f"{s.local_iters} words by each of {local_items} work-items, {stat}",
        local, "B/s", "l1_wavefronts_per_cycle_per_cu",
        l1_wavefronts_per_cycle(local, cu, base.clock_hz, base.line_bytes)))
    progress("fp32_fma")
    t = med(mb.fma_chains(target, s.fma_iters, s.fma_work_items, r))
    flops = fma_flop_per_s(s.fma_work_items, 8 * s.fma_iters, t)
    out.append(Measurement("fp32_fma", f"{8 * s.fma_iters} FMAs by each of "
                           f"{s.fma_work_items} work-items, {stat}", flops, "flop/s",
                           "fp32_flop_per_s", flops))
    progress("pointer_chase")
    nxt = mb.chase_permutation(s.chase_elems)
    n = s.chase_steps
    out.append(_positive(Measurement(
        "pointer_chase", f"{n} more loads over {_mib(4 * s.chase_elems)}, {stat}",
        _per_extra_step_s(lambda k: mb.pointer_chase(target, nxt, k, r), n), "s",
        why_unmapped=(
            "the unloaded latency of one dependent load; the time model's latency is a "
            "barrier interval's (staging_round_trip)"))))
    for name, nbytes, field in (("staging_round_trip", s.staging_bytes, "memory_latency_s"),
                                ("staging_round_trip_dram", s.staging_dram_bytes,
                                 "memory_latency_dram_s")):
        progress(name)
        n = s.staging_steps
        step_s = _per_extra_step_s(
            lambda k, nbytes=nbytes: mb.staging_round_trip(target, nbytes, k, cu, r), n)
        out.append(_positive(Measurement(
            name, f"{n} more steps of {cu} work-groups of {mb.staging_local_size(target)} "
            f"over {_mib(nbytes)}, {stat}", step_s, "s", field)))
    progress("strided_read")
    out.extend(_strided(target, base, s))
    progress("register_tile")
    out.append(_register_tile(target, base, s))
    progress("issue_rate")
    from tiletraffic.analysis.calibrate.issue_rate import measure_issue_rates

    out.append(measure_issue_rates(target, base, s.issue_rate_steps, r))
    progress("empty_kernel")
    t = med(mb.empty(target, max(r, 20)))
    out.append(Measurement("empty_kernel", f"one work-item, median of {max(r, 20)}", t, "s",
                           "launch_overhead_s", t))
    progress("barrier")
    c = s.barrier_count
    short, long = (med(mb.barriers(target, k, s.work_groups, r)) for k in (c, 2 * c))
    cost = barrier_s_per_work_group(long, short, c, s.work_groups, cu)
    m = Measurement("barrier", f"{c} more barriers in each of {s.work_groups} work-groups of "
                    f"{mb.local_size(target)}, {stat}", cost, "s",
                    "barrier_wavefronts_per_work_group")
    if cost > 0 and barrier_wavefronts(cost, local, cu, base.line_bytes) < 1:
        m = replace(m, field=None, why_unmapped="below half an L1 wavefront (the field is a "
                    "positive integer)")
    elif cost > 0:
        m = replace(m, field_value=barrier_wavefronts(cost, local, cu, base.line_bytes))
    out.append(_positive(m))
    return out


def _l2_size(target, s: Sizes, dram_read: float) -> Measurement:
    """The footprint sweep: each footprint re-read ``l2_sweep_bytes / footprint`` times (at
    least twice), each pass starting elsewhere (read_sum's shift), so that every line is read
    by as many work-groups as there are passes; :func:`l2_capacity_from_sweep` gives the
    capacity those passes see, which sets ``l2_bytes`` as it is: no partition copies are
    added (the stream of this benchmark does not take a copy in each partition, so the
    capacity it sees is the device's, not twice it)."""
    from tiletraffic.gpu.devices import microbench as mb

    rates = []
    for f in s.l2_sweep_footprints:
        n = max(2, s.l2_sweep_bytes // f)
        t = statistics.median(mb.read_sum(target, f, n, s.stream_work_items, s.repeat))
        rates.append(bytes_per_s(f * n, t))
    seen = l2_capacity_from_sweep(s.l2_sweep_footprints, rates, dram_read)
    what = (f"re-reads of {_mib(s.l2_sweep_footprints[0])}..{_mib(s.l2_sweep_footprints[-1])}"
            f" in {len(rates)} footprints, median of {s.repeat}")
    detail = "rates: " + ", ".join(f"{_mib(f)} {r / 1e9:.4g} GB/s" for f, r in
                                   zip(s.l2_sweep_footprints, rates, strict=True))
    if seen is None:
        return Measurement("l2_size", what, float("nan"), "B", detail=detail, why_unmapped=(
            f"no footprint fell from {L2_SIZE_THRESHOLD} x the DRAM rate or more to below it"))
    return Measurement("l2_size", what + f", below {L2_SIZE_THRESHOLD} x DRAM from "
                       f"{seen / MIB:.1f} MiB", seen, "B", "l2_bytes", int(round(seen)),
                       detail=detail)


def _register_tile(target, base: DeviceModel, s: Sizes) -> Measurement:
    """``register_tile`` over ``2 x work_groups`` work-groups (lengths n and 2n): the issue
    rate in the model's instructions; unmapped on a device whose work-groups cannot hold its
    16 x 16 work-items."""
    from tiletraffic.gpu.devices import microbench as mb

    n, groups, r = s.register_tile_steps, s.work_groups * 2, s.repeat
    what = f"{n} more steps of {groups} work-groups of 16 x 16, median of {r}"
    if target.info.max_work_group_size < 256:
        return Measurement("register_tile", what, float("nan"), "instructions/cycle",
                           why_unmapped=f"needs work-groups of 256 work-items, the device "
                           f"allows {target.info.max_work_group_size}")
    step_s = _per_extra_step_s(lambda k: mb.register_tile(target, k, groups, r), n)
    rate = issue_rate(groups * -(-256 // base.sub_group_size)
                      * mb.REGISTER_TILE_INSTRUCTIONS_PER_STEP, step_s, base.clock_hz,
                      base.compute_units, base.sub_partitions_per_cu)
    return _positive(Measurement("register_tile", what, rate, "instructions/cycle",
                                 "warp_instructions_per_cycle_per_sub_partition"))


def _strided(target, base: DeviceModel, s: Sizes) -> list[Measurement]:
    """``strided_read`` at each of :data:`STRIDE_OFFSETS_WORDS` (lengths n and 2n: the
    launch cancels): cycles per request of a sub-group, then :func:`strided_fit`."""
    from tiletraffic.gpu.devices import microbench as mb

    local, n, r = mb.local_size(target), s.strided_length, s.repeat
    lanes = min(base.sub_group_size, local)
    sub_groups = -(-local // base.sub_group_size)

    def sub_group_cycles(run: Callable[[int], list[float]]) -> float:
        """Cycles of one sub-group's step of ``run`` (lengths n and 2n): a step of a
        work-item is one request of its sub-group, the sub-groups of a compute unit one after
        another."""
        return _per_extra_step_s(run, n) * base.clock_hz / sub_groups

    def cycles_per_request(d: int, groups: int, own_rows: bool) -> float:
        """:func:`sub_group_cycles` of ``strided_read`` at row stride base + d."""
        return sub_group_cycles(lambda k: mb.strided_read(
            target, s.strided_base_words + d, k, groups, r, own_rows))

    cycles = [cycles_per_request(d, base.compute_units, False) for d in STRIDE_OFFSETS_WORDS]
    busiest = [lanes // distinct_banks(d, lanes, base.local_banks) for d in STRIDE_OFFSETS_WORDS]
    what = (f"{n} more words per work-item of {base.compute_units} work-groups of {local}, "
            f"rows {s.strided_base_words} + d words apart, d = "
            f"{', '.join(map(str, STRIDE_OFFSETS_WORDS))}, median of {r}")
    a, b = strided_fit(lanes, busiest, cycles)
    fitted = [a * lanes + b * k for k in busiest]
    detail = "cycles per request (busiest bank lines: measured / fit): " + ", ".join(
        f"{k}: {c:.3g} / {f:.3g}" for k, c, f in zip(busiest, cycles, fitted, strict=True))
    usable = a > 0 and b >= 0 and all(math.isfinite(c) and c > 0 for c in cycles)
    why = "" if usable else (f"the fit is not usable (per line {a:.3g}, per busiest-bank "
                             f"line {b:.3g}: one of them 0 or less): timing noise, or a "
                             "device whose strided requests do not cost so")
    # the same requests with every row read once (lines from DRAM), reported: as many
    # work-groups (at most one per compute unit) as rows fit dram_read's buffer
    groups = max(1, min(base.compute_units,
                        s.dram_bytes // (4 * local * (s.strided_base_words + 1))))
    own = [cycles_per_request(d, groups, True) for d in (0, 1)]
    # the same from DRAM at one bank with a broadcast operand x per step, from global memory
    # and from local memory (as matvec-naive and matvec-local-whole read x): reported
    with_x = {space: sub_group_cycles(lambda k, space=space: mb.strided_read_x(
        target, s.strided_base_words, k, groups, r, space)) for space in ("global", "local")}
    # a request advances each of its lanes' rows by one word: lanes x 4 B / line_bytes new
    # lines per request; at d = 1 the bank term is smallest, so the fills set the time
    fills_per_request = lanes * 4 / base.line_bytes
    fill = own[1] * sub_groups / fills_per_request
    dram_what = (f"{n} more words per work-item of {groups} work-groups of "
                 f"{local}, each work-item its own row, rows {s.strided_base_words} + d words "
                 f"apart, median of {r}")
    return [Measurement("strided_read", what, a, "cycles/line",
                        "l1_strided_cycles_per_line" if usable else None, a,
                        why_unmapped=why, detail=detail),
            Measurement("strided_read", what + " (busiest bank)", b, "cycles/line",
                        "l1_strided_cycles_per_busiest_bank_line" if usable else None, b,
                        why_unmapped=why),
            _positive(Measurement(
                "strided_read_dram", dram_what, fill, "sub-group cycles/line",
                "strided_dram_fill_sub_group_cycles_per_line",
                detail=f"cycles per request: d = 0 (one bank) {own[0]:.3g}, d = 1 "
                f"(32 banks) {own[1]:.3g}; from L2 (strided_read): {cycles[0]:.3g} and "
                f"{cycles[-1]:.3g}; d = 1's x {sub_groups} sub-groups / "
                f"{fills_per_request:.3g} lines filled per request")),
            Measurement("strided_read_x", dram_what + ", d = 0, x[k] at every step",
                        with_x["global"] - with_x["local"], "cycles/step",
                        why_unmapped="reported: what a broadcast operand from global memory "
                        "costs beside strided requests from DRAM over one from local memory "
                        "(not in the model)",
                        detail=f"cycles per step at one bank from DRAM: no operand "
                        f"{own[0]:.3g}, x from global memory {with_x['global']:.3g}, x from "
                        f"local memory {with_x['local']:.3g}")]


def _positive(m: Measurement) -> Measurement:
    """``m`` with its field set (to its value where no other was given), or unmapped when
    timing noise made the value not positive and finite (a reported value too: its reason
    then says so, and that it is not a measurement)."""
    noise = "not positive: the timing noise exceeds the difference"
    if not (m.value > 0 and math.isfinite(m.value)):
        return replace(m, field=None, field_value=None,
                       why_unmapped=noise + (f"; {m.why_unmapped}" if m.field is None else ""))
    if m.field is None:
        return m
    return m if m.field_value is not None else replace(m, field_value=m.value)


CEILING_SLACK = 0.01
"""How far (a fraction) a measured value may exceed its ceiling before it is refused: the
rounding of the documents' peaks (3.35 TB/s, 67 TFLOP/s)."""

ISSUE_FIELD = "warp_instructions_per_cycle_per_sub_partition"
_PEAK_FIELDS = ("dram_bytes_per_s", "l2_bytes_per_s", "fp32_flop_per_s",
                "l1_wavefronts_per_cycle_per_cu", ISSUE_FIELD)


def ceilings(base: DeviceModel) -> dict[str, tuple[float, str]]:
    """Field -> (the most the hardware can do, why) for the rates a benchmark measures:
    the base model's value where it is ``documented`` (a datasheet's or whitepaper's peak);
    for the issue rate, where it is not documented, one warp instruction per cycle per
    scheduler (a single-issue warp scheduler, as every NVIDIA GPU's since compute
    capability 5.0)."""
    out = {}
    for key in _PEAK_FIELDS:
        source = base.value_sources.get(key)
        if source is not None and source.kind == "documented":
            out[key] = (float(getattr(base, key)), f"the documented peak in {base.name} "
                        f"({source.ref})")
    out.setdefault(ISSUE_FIELD, (1.0, "one warp instruction per cycle per scheduler"))
    return out


def refuse_impossible(measurements: list[Measurement], base: DeviceModel
                      ) -> list[Measurement]:
    """``measurements`` with every value above its :func:`ceilings` entry (by more than
    :data:`CEILING_SLACK`) unmapped (``field`` None: not written to the model) and its
    ``refused`` message set: the benchmark, the value, the limit and why, and, for the
    issue rate, the clock and compute units it was computed with (a clock or a count too
    low inflates it)."""
    limits = ceilings(base)
    out = []
    for m in measurements:
        table = m.field == "issue_rates" and m.field_value is not None
        key = ISSUE_FIELD if table else m.field
        if key not in limits or m.field_value is None:
            out.append(m)
            continue
        limit, why = limits[key]
        value = m.field_value.largest if table else m.field_value
        if value <= limit * (1 + CEILING_SLACK):
            out.append(m)
            continue
        name = f"{m.field} (its largest rate)" if table else m.field
        message = (f"{m.benchmark}: {name} = {value:.4g} is above what the "
                   f"hardware can do, {limit:.4g} ({why}); not written to the model")
        if key == ISSUE_FIELD:
            kinds = {k: base.value_sources.get(k, ValueSource("guessed", "")).kind
                     for k in ("clock_hz", "compute_units", "sub_partitions_per_cu")}
            message += (f" (computed with clock_hz = {base.clock_hz:.4g} ({kinds['clock_hz']}"
                        f"), compute_units = {base.compute_units} ({kinds['compute_units']}"
                        f"), sub_partitions_per_cu = {base.sub_partitions_per_cu} "
                        f"({kinds['sub_partitions_per_cu']}): a value too low inflates it)")
        out.append(replace(m, field=None, field_value=None, refused=message,
                           why_unmapped=f"refused: above what the hardware can do, "
                           f"{limit:.4g} ({why})"))
    return out


def calibrated_model(base: DeviceModel, measurements: list[Measurement], device: str,
                     when: datetime | None = None) -> DeviceModel:
    """``base`` with every mapped measurement's field set, source ``measured``, ref a new
    ``[references]`` key ``"tiletraffic calibrate: <benchmark> (<what>)"`` whose citation
    names ``device`` and the UTC date."""
    when = when or datetime.now(timezone.utc)
    refs, values = dict(base.references), {}
    for m in measurements:
        if m.field is None:
            continue
        key = f"tiletraffic calibrate: {m.benchmark} ({m.what})"
        refs[key] = f"{key} on {device}, {when:%Y-%m-%d %H:%M} UTC"
        values[m.field] = (m.field_value, ValueSource(
            "measured", key, f"{m.benchmark}: {m.value:.4g} {m.unit}"))
    model = base.with_values(values, name=f"calibrated:{base.name.split(':')[-1]}")
    return replace(model, references=refs, description=(
        f"{device}: {', '.join(values)} measured by tiletraffic calibrate; "
        f"{base.description}"))


def calibrate(target, quick: bool = False,
              progress: Callable[[str], None] = lambda name: None,
              base: DeviceModel | None = None, datasheet=None
              ) -> tuple[DeviceModel, list[Measurement]]:
    """Measure the opened device ``target``: (its calibrated model, the measurements).

    The base model is :func:`~tiletraffic.gpu.devices.device_models.model_from_opencl` with the
    L2 size from ``CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`` (until ``l2_size`` measures it),
    completing ``base`` (default: the built-in model matching the device's name, else the
    nearest built-in model with ``datasheet``'s values (a ``simulator.model.datasheet.
    Datasheet``; default the shipped one that fits the device's name) and the queried ones
    in place of its own, else ``generic-gpu``; pass ``generic-gpu`` for a model that owes
    nothing to earlier measurements of any device); sizes from :func:`plan_sizes`. A value
    beyond what the hardware can do is not written (:func:`refuse_impossible`: its
    measurement's ``refused`` says why).

    Raises:
        CalibrationError: too little memory for a benchmark (nothing was run).
        tiletraffic.gpu.runtime.launch.TiletrafficGpuError: a build, launch or result check failed.
    """
    from tiletraffic.gpu.devices.microbench import local_size

    from tiletraffic.gpu.devices.device_models import model_from_opencl

    info, dev = target.info, target.device
    base = model_from_opencl(info, global_cache_bytes=int(dev.global_mem_cache_size) or None,
                             base=base, datasheet=datasheet)
    sizes = plan_sizes(base.compute_units, base.l2_bytes, info.global_mem_bytes,
                       int(dev.max_mem_alloc_size), info.local_mem_bytes, local_size(target),
                       quick)
    measurements = refuse_impossible(measure(target, base, sizes, progress), base)
    device = f"{info.device_name} ({info.platform_name}, driver {info.driver_version})"
    return calibrated_model(base, measurements, device), measurements


def _si(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return "not measured"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if unit != "s" and abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    if unit == "s":
        for scale, prefix in ((1, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {prefix}s"
    return f"{value:.3g} {unit}"


TABLE_WIDTH = 100
"""The widest line of :func:`table` but for a row whose own three columns are wider: the
notes under a row are wrapped to it."""


def table(measurements: list[Measurement]) -> str:
    """The measurements as a text table (returned, not printed): benchmark, measured value
    and the field it sets (``nothing`` when none); under each row, indented and wrapped at
    :data:`TABLE_WIDTH` columns, the size and statistic, why a value sets nothing
    (``not set: ...``) and the benchmark's detail."""
    import textwrap

    rows = [("benchmark", "measured", "sets")]
    for m in measurements:
        rows.append((m.benchmark, _si(m.value, m.unit),
                     f"{m.field} = {m.field_value:.4g}" if m.field else "nothing"))
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    lines = []
    for r, m in zip(rows, [None, *measurements], strict=True):
        lines.append(f"{r[0].ljust(widths[0])}  {r[1].ljust(widths[1])}  {r[2]}")
        if m is None:
            continue
        notes = [m.what, *([f"not set: {m.why_unmapped}"] if not m.field else []),
                 *([m.detail] if m.detail else [])]
        for note in filter(None, notes):
            lines += textwrap.wrap(note, TABLE_WIDTH, initial_indent="    ",
                                   subsequent_indent="      ", break_on_hyphens=False)
    return "\n".join(lines)
