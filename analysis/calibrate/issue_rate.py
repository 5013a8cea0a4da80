"""``tiletraffic calibrate``'s ``issue_rate`` benchmark: the issue rate of FMAs beside 128-bit
and 32-bit local loads at 1, 2, 3, 4 and 8 sub-groups per scheduler, written to the device
model as its ``issue_rates`` table (:mod:`tiletraffic.simulator.model.issue_rates`).

One work-group per compute unit, of ``w`` x ``sub_partitions_per_cu`` sub-groups, runs
``issue_mix_128`` and ``issue_mix_32`` (``gpu/devices/templates/issue_mix.cl``) for n and
2 n steps; a step's time is the difference over n (the launch cancels), and the rate is
:func:`mix_rate`. Only the numbers of sub-groups per scheduler whose work-group the device
allows are measured, and of those only the ones below the first whose work-group the
kernels do not launch at (their registers do not fit that many work-items; the detail says
so); fewer than two leave the table unset.
"""
from __future__ import annotations

import math
import statistics

from tiletraffic.analysis.calibrate.measurement import Measurement
from tiletraffic.simulator.model.device_model import DeviceModel
from tiletraffic.simulator.model.issue_rates import IssueRates

WARPS_PER_SCHEDULER = (1, 2, 3, 4, 8)
"""The sub-groups per scheduler (sub-partition) the benchmark measures."""


def mix_rate(sub_groups_per_cu: int, instructions_per_step: int, step_s: float,
             clock_hz: float, sub_partitions_per_cu: int) -> float:
    """Sub-group instructions per cycle per scheduler: ``sub_groups_per_cu`` sub-groups of a
    compute unit each issuing ``instructions_per_step`` per step of ``step_s`` seconds, on
    ``sub_partitions_per_cu`` schedulers at ``clock_hz`` (every compute unit runs one
    work-group: per unit is per launch).

    Example: 8 sub-groups x 548 instructions in 2.5 us at 1.98 GHz on 4 schedulers:
    4384 / (4950 x 4) = 0.2214."""
    return sub_groups_per_cu * instructions_per_step / (step_s * clock_hz
                                                        * sub_partitions_per_cu)


def measure_issue_rates(target, base: DeviceModel, steps: int, repeat: int):
    """The ``issue_rate`` measurement (a ``calibrate.Measurement``): field ``issue_rates``
    set to the table of the measured points, its value the largest rate; unmapped when
    fewer than two numbers of sub-groups per scheduler fit a work-group of the device or
    launch (the module docstring), a
    time difference is not positive (timing noise), or its kernels fail to build, launch
    or give the host's result (the reason names the error; the other benchmarks' values
    stand)."""
    from tiletraffic.gpu.devices.device import TiletrafficGpuError

    try:
        return _measure(target, base, steps, repeat)
    except TiletrafficGpuError as err:
        return Measurement("issue_rate", f"{steps} more steps of one work-group per compute "
                           f"unit", float("nan"), "instructions/cycle",
                           why_unmapped=f"the benchmark did not run: {err}")


def _measure(target, base: DeviceModel, steps: int, repeat: int):
    """:func:`measure_issue_rates` without its handling of a device error."""
    from tiletraffic.gpu.devices import microbench as mb

    cu, parts, width = base.compute_units, base.sub_partitions_per_cu, base.sub_group_size
    limit = target.info.max_work_group_size
    fits = [w for w in WARPS_PER_SCHEDULER
            if w * parts * width <= limit and (w * parts * width) % 32 == 0]

    def what(ws: list[int]) -> str:
        return (f"{steps} more steps of {cu} work-groups (one per compute unit) of "
                f"{', '.join(str(w * parts * width) for w in ws) or 'no size that fits'} "
                f"work-items ({', '.join(map(str, ws))} sub-groups per scheduler), "
                f"median of {repeat}")

    if len(fits) < 2:
        return Measurement("issue_rate", what(fits), float("nan"), "instructions/cycle",
                           why_unmapped=f"needs work-groups of {2 * parts * width} "
                           f"work-items or more, the device allows {limit}")
    columns: dict[str, list[float]] = {"local_128": [], "local_32": []}
    measured, refused = [], ""
    for w in fits:
        items = w * parts * width

        def median_s(n: int, vector: bool, items=items) -> float:
            return statistics.median(mb.issue_mix(target, n, items, cu, repeat, vector))

        try:
            steps_s = {column: (median_s(2 * steps, vector) - median_s(steps, vector)) / steps
                       for column, vector in (("local_128", True), ("local_32", False))}
        except mb.MicrobenchLaunchError as err:
            # a larger work-group holds more registers: it does not launch either
            refused = f"{w} sub-groups per scheduler ({items} work-items) did not launch: {err}"
            break
        measured.append(w)
        for column, step_s in steps_s.items():
            columns[column].append(
                mix_rate(w * parts, mb.ISSUE_MIX_INSTRUCTIONS_PER_STEP[column], step_s,
                         base.clock_hz, parts) if step_s > 0 else math.nan)
    if len(measured) < 2:
        return Measurement("issue_rate", what(fits), float("nan"), "instructions/cycle",
                           why_unmapped=f"fewer than two points: {refused}")
    detail = "sub-group instructions per cycle per scheduler (128-bit / 32-bit loads): " + \
        ", ".join(f"{w}: {a:.3g} / {b:.3g}" for w, a, b in
                  zip(measured, columns["local_128"], columns["local_32"], strict=True)) + \
        (f"; {refused}" if refused else "")
    rates = [*columns["local_128"], *columns["local_32"]]
    if not all(math.isfinite(x) and x > 0 for x in rates):
        return Measurement("issue_rate", what(measured), float("nan"), "instructions/cycle",
                           why_unmapped="not positive: the timing noise exceeds the "
                           "difference", detail=detail)
    table = IssueRates(tuple(float(w) for w in measured), tuple(columns["local_128"]),
                       tuple(columns["local_32"]))
    return Measurement("issue_rate", what(measured), table.largest, "instructions/cycle",
                       "issue_rates", table, detail=detail)
