"""The data of an explain page: one launch observed, as a JSON-ready document.

:func:`explain_data` simulates the whole launch once (counts only, hazards reported) with
the read maps of every input and a :class:`simulator.observers.explain.ExplainObserver` for
one work-group, and models it on a device model (:func:`simulator.model.launch.
model_launch`, as ``tiletraffic model`` does). Every number the page shows is in the
document it returns; the page only draws them.
"""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.model.device_model import DeviceModel, GuessedValueWarning
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.observers.explain import ExplainObserver, MemoryParams
from tiletraffic.simulator.observers.hazards import HazardError
from tiletraffic.simulator.observers.memory import MemoryCounts
from tiletraffic.simulator.model.launch import model_launch
from tiletraffic.simulator.model.observation import device_limits
from tiletraffic.simulator.model.prediction import ADDED_TIME_TERMS

from tiletraffic.analysis.api.closed_forms import derived_summary
from tiletraffic.analysis.api.schedules import closed_form
from tiletraffic.analysis.device_model import DEFAULT_MODEL, resolve_device_model

MAX_SIDE_ELEMS = 64
"""Most elements along one side of a drawn array: at 64 the cells of a 448-pixel-wide
picture are 7 pixels, the smallest one still reads (and hovers) as a cell."""

MAX_WORK_GROUP_ITEMS = 1024
"""Most work-items of the drawn work-group (as many as a work-group may have)."""

MAX_WORK_GROUPS = 4096
"""Most work-groups of a launch: every one is executed (read maps, races), in seconds."""

TIME_TERM_FIELDS: dict[str, tuple[str, ...]] = {
    "fp32_s": ("fp32_flop_per_s",),
    "dram_s": ("dram_bytes_per_s", "l2_bytes", "l2_associativity", "l2_partitions"),
    "l2_s": ("l2_bytes_per_s", "sector_bytes", "l1_sharing_work_groups"),
    "l1_s": ("l1_wavefronts_per_cycle_per_cu", "clock_hz", "barrier_wavefronts_per_work_group",
             "l1_strided_cycles_per_line", "l1_strided_cycles_per_busiest_bank_line"),
    "l1_requests_s": ("l1_requests_per_cycle_per_cu", "clock_hz"),
    "issue_s": ("warp_instructions_per_cycle_per_sub_partition", "sub_partitions_per_cu",
                "clock_hz"),
    "l1_strided_dram_s": ("strided_dram_fill_sub_group_cycles_per_line", "clock_hz"),
    "barrier_latency_s": ("memory_latency_s", "memory_latency_dram_s", "max_work_groups_per_cu",
                          "max_work_items_per_cu", "local_mem_bytes_per_cu"),
    "tail_s": ("memory_latency_s", "memory_latency_dram_s", "compute_units"),
    "launch_overhead_s": ("launch_overhead_s",),
}
"""The device-model values each time term of :func:`simulator.model.prediction.predict` is
computed from (its formula, read off that function), to mark the terms resting on guesses."""

TERM_METHODS = {
    "fp32_s": "FLOPs at the FP32 rate",
    "dram_s": "DRAM bytes (read + written) at DRAM bandwidth",
    "l2_s": "L2 -> L1 sectors at L2 bandwidth",
    "l1_s": "L1 wavefronts (global lines, local wavefronts, barriers) on the busiest compute "
            "unit",
    "l1_requests_s": "global requests at the L1 tag rate, busiest compute unit",
    "issue_s": "sub-group instructions at the schedulers' issue rate, busiest compute unit",
    "l1_strided_dram_s": "lines strided requests fill from DRAM",
    "barrier_latency_s": "memory latency the resident work-groups cannot hide at barriers "
                         "(mean value analysis)",
    "tail_s": "the last work-groups of a compute unit, with fewer companions",
    "launch_overhead_s": "launch overhead",
}
"""One line per time term: what it charges (the model's docstring tells the whole method)."""


class ExplainSizeError(ValueError):
    """The launch is too large to draw: the message names the limit and a size to use."""


def _dims(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, columns) an array of this logical shape is drawn as (1-D: one row)."""
    if len(shape) <= 1:
        return 1, int(shape[0]) if shape else 1
    return int(math.prod(shape[:-1])), int(shape[-1])


def arrays(schedule: S.Schedule) -> list[dict]:
    """Every global and local array: name, space, role, logical shape, drawn rows and
    columns, and (global) the parameter name of each dimension."""
    p = schedule.param_values
    out = []
    for a in schedule.arrays:
        shape = tuple(p[s] for s in a.shape)
        rows, cols = _dims(shape)
        out.append({"name": a.name, "space": "global", "role": a.role, "shape": list(shape),
                    "dims": list(a.shape), "rows": rows, "cols": cols})
    for a in schedule.local_arrays:
        shape = tuple(d.value for d in a.dims)
        rows, cols = _dims(shape)
        out.append({"name": a.name, "space": "local", "role": "local", "shape": list(shape),
                    "dims": [], "rows": rows, "cols": cols})
    return out


def check_size(schedule: S.Schedule) -> None:
    """Refuse a launch whose pictures would be unreadable.

    Raises:
        ExplainSizeError: an array with more than :data:`MAX_SIDE_ELEMS` elements along a
            drawn side (the message names the array, the limit and the size options to use),
            a work-group above :data:`MAX_WORK_GROUP_ITEMS` work-items, or a launch of
            more than :data:`MAX_WORK_GROUPS` work-groups.
    """
    p = schedule.param_values
    drawn = arrays(schedule)
    over = list(dict.fromkeys(d for a in drawn for d in a["dims"]
                              if p.get(d, 0) > MAX_SIDE_ELEMS))   # every size to lower
    for a in drawn:
        for side, size in (("rows", a["rows"]), ("columns", a["cols"])):
            if size <= MAX_SIDE_ELEMS:
                continue
            dims = a["dims"][:-1] if side == "rows" else a["dims"][-1:]
            too_big = list(dict.fromkeys(d for d in dims if p.get(d, 0) > MAX_SIDE_ELEMS))
            launch_file = bool({"opencl", "cuda"} & set(schedule.extra or {}))   # --set sizes
            named = [d for d in dims if d in p]
            if too_big:
                hint = " ".join(f"--set {d}={MAX_SIDE_ELEMS}" if launch_file else
                                f"{_size_option(d)} {MAX_SIDE_ELEMS}" for d in over) \
                    + " or less"
            elif len(named) > 1:   # each side fits, their product does not
                hint = (" and ".join(f"--set {d}" if launch_file else _size_option(d)
                                     for d in named)
                        + f" whose product ({' x '.join(named)}) is at most {MAX_SIDE_ELEMS}")
            elif launch_file:   # a size the source fixes (a #define), not the launch file
                hint = "smaller sizes where the kernel's source or its build_options set them"
            else:
                hint = "a smaller tile"
            raise ExplainSizeError(
                f"{a['name']} is {' x '.join(map(str, a['shape']))}: explain draws every "
                f"element, at most {MAX_SIDE_ELEMS} {side} per array; use {hint}")
    if schedule.work_group_items > MAX_WORK_GROUP_ITEMS:
        raise ExplainSizeError(f"work-groups of {schedule.work_group_items} work-items: "
                               f"explain draws at most {MAX_WORK_GROUP_ITEMS}; use a smaller "
                               "--tile")
    if schedule.work_groups > MAX_WORK_GROUPS:
        raise ExplainSizeError(f"a launch of {schedule.work_groups} work-groups: explain "
                               f"executes every one, at most {MAX_WORK_GROUPS}; use smaller "
                               "sizes or a larger tile")


def _size_option(param: str) -> str:
    """The command-line option that sets size parameter ``param`` (``S``: ``--splits``)."""
    return "--splits" if param == "S" else f"--{param.lower()}"


def group_coordinates(schedule: S.Schedule, linear: int) -> list[int]:
    """Work-group id per NDRange dimension of linear id ``linear`` (dimension 0 fastest)."""
    out = []
    for n in schedule.num_groups:
        out.append(linear % n)
        linear //= n
    return out


def _linear(schedule: S.Schedule, coords) -> int:
    linear, scale = 0, 1
    for c, n in zip(coords, schedule.num_groups):
        linear += int(c) * scale
        scale *= n
    return linear


def _observe(schedule: S.Schedule, model: DeviceModel, group: int, step_iterations: int):
    observer = ExplainObserver(group, MemoryParams.of(model), step_iterations=step_iterations)
    inputs = [a.name for a in schedule.arrays if a.is_input]
    result = simulate(schedule, compute_values=False, read_maps=inputs, hazards="report",
                      limits=device_limits(model), observers=[observer])
    return result, observer


def _time(schedule: S.Schedule, model: DeviceModel, registers: int | None) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            launch = model_launch(schedule, model, registers_per_work_item=registers)
        except HazardError as err:
            return {"unavailable": f"not modelled: the launch has a hazard ({err})"}
    pred = launch.prediction
    terms = pred.time_terms_s
    ceilings = [t for t in terms if t not in ADDED_TIME_TERMS]
    guessed = set(model.guessed)
    return {
        "device_model": model.name,
        "terms_s": dict(terms),
        "ceilings": ceilings,
        "added": list(ADDED_TIME_TERMS),
        "bound": pred.bound + "_s",
        "predicted_time_s": pred.predicted_time_s,
        "term_methods": {t: TERM_METHODS.get(t, "") for t in terms},
        "term_guessed_values": {t: [f for f in TIME_TERM_FIELDS.get(t, ()) if f in guessed]
                                for t in terms},
        "guessed_values": {f: model.value_sources[f].ref for f in model.guessed
                           if f in model.value_sources},
        "methods": dict(pred.methods),
        "resident_work_groups_per_cu": pred.resident_work_groups_per_cu,
        "warnings": [str(w.message) for w in caught
                     if not issubclass(w.category, GuessedValueWarning)],
        "model": {k: v for k, v in launch.to_dict().items()
                  if isinstance(v, (int, float, str)) or k.endswith("_by_buffer")},
    }


def _per_element_rule(schedule: S.Schedule) -> dict[str, str]:
    """The closed form of how often each element of each input is read, for the families
    whose inputs are read uniformly (seed texts: naive GEMM reads every element of A N
    times, tiled GEMM ⌈N/B⌉ times)."""
    p, t = schedule.param_values, schedule.tile
    fam = schedule.family
    if fam == "gemm-naive":
        return {"A": f"N = {p['N']}", "B": f"M = {p['M']}"}
    if fam == "gemm-tiled":
        return {"A": f"⌈N/B⌉ = ⌈{p['N']}/{t}⌉ = {-(-p['N'] // t)}",
                "B": f"⌈M/B⌉ = ⌈{p['M']}/{t}⌉ = {-(-p['M'] // t)}"}
    if fam == "matvec-naive":
        return {"A": "1", "x": f"M = {p['M']}"}
    if fam in ("matvec-local", "matvec-local-whole"):
        return {"A": "1", "x": f"⌈M/T⌉ = ⌈{p['M']}/{t}⌉ = {-(-p['M'] // t)} (one read per "
                               "work-group)"}
    return {}


def explain_data(schedule: S.Schedule, device: str | DeviceModel = DEFAULT_MODEL, *,
                 work_group=None, step_iterations: int | None = None,
                 registers_per_work_item: int | None = None) -> dict:
    """Observe ``schedule`` for its explain page.

    Args:
        schedule: any schedule (family, variant, a user's).
        device: a device model (name, file or :class:`DeviceModel`): the sub-group size,
            sectors, lines and banks of the pictures, and the time model.
        work_group: the work-group drawn, a linear id (dimension 0 fastest) or one id per
            NDRange dimension; default: the first hazard's work-group, else work-group 0.
        step_iterations: for a schedule without barriers, iterations of a load statement
            per step (default: the schedule's tile, else 16).
        registers_per_work_item: as for :func:`tiletraffic.model`.

    Returns:
        The page's document: ``schedule``, ``arrays``, ``work_group``, ``steps``, ``reuse``,
        ``counts`` (``TrafficCounts.to_dict()``, as ``simulate --json``), ``closed_form``
        (:func:`tiletraffic.analysis.api.schedules.closed_form`: a built-in family's, or
        the schedule's file's own; some counters only, or None),
        ``sites`` and ``samples`` (per load/store statement: its launch-wide memory counts
        and one sub-group's request), ``memory`` (their sums: the launch's
        ``MemoryCounts``), ``hazards`` and ``time``.

    Raises:
        ExplainSizeError: the launch is too large to draw (:func:`check_size`).
        ValueError: a work-group outside the launch, ``step_iterations`` below 1.
        KeyError, DeviceModelError: an unknown or malformed device model.
        LimitError: the schedule exceeds the device model's limits.
        UserScheduleError: the schedule's file's ``closed_form`` raised or returned no
            counts.
    """
    check_size(schedule)
    model = resolve_device_model(device)
    if step_iterations is None:
        step_iterations = schedule.tile or 16
    if step_iterations < 1:
        raise ValueError(f"step_iterations must be >= 1, got {step_iterations}")
    chosen = None
    if work_group is not None:
        chosen = (int(work_group) if np.ndim(work_group) == 0 else
                  _linear(schedule, work_group))
        coords = group_coordinates(schedule, chosen)
        if not 0 <= chosen < schedule.work_groups or (
                np.ndim(work_group) and list(map(int, work_group)) != coords[:len(work_group)]):
            shown = (str(int(work_group)) if np.ndim(work_group) == 0 else
                     str(tuple(int(x) for x in work_group)))
            raise ValueError(f"work-group {shown} is outside the launch of "
                             f"{' x '.join(map(str, schedule.num_groups))} work-groups")
    result, observer = _observe(schedule, model, chosen or 0, step_iterations)
    if chosen is None and result.hazards and result.hazards[0].group_id:
        hazard_group = _linear(schedule, result.hazards[0].group_id)
        if hazard_group != 0:
            result, observer = _observe(schedule, model, hazard_group, step_iterations)
        chosen = hazard_group
    chosen = chosen or 0
    by_barriers = observer.barriers_passed > 0
    steps = observer.steps(by_barriers)
    per_item = observer.work_item_elements(by_barriers)
    formula = closed_form(schedule)
    rules = _per_element_rule(schedule)
    reuse = {}
    for name, counts in result.read_maps.items():
        flat = np.asarray(counts).reshape(-1)
        reuse[name] = {
            "reads": flat.tolist(),
            "total": int(flat.sum()),
            "min": int(flat.min()) if flat.size else 0,
            "max": int(flat.max()) if flat.size else 0,
            "closed_form_total": (formula or {}).get("global_load_elems_by_buffer",
                                                     {}).get(name),
            "per_element_closed_form": rules.get(name),
        }
    sites = [s.to_dict() for s in observer.sites()]
    # every counter at 0 for a launch without memory accesses
    memory: dict[str, int] = {key: 0 for key, value in MemoryCounts().to_dict().items()
                              if isinstance(value, int) and not isinstance(value, bool)}
    for s in sites:
        for key, value in s["memory"].items():
            if isinstance(value, int) and not isinstance(value, bool):
                memory[key] = memory.get(key, 0) + value
    p = schedule.param_values
    return {
        "schedule": {
            "family": schedule.family, "kernel_name": schedule.kernel_name,
            "description": schedule.description, "params": dict(p), "tile": schedule.tile,
            "local_size": list(schedule.local_size), "global_size": list(schedule.global_size),
            "num_groups": list(schedule.num_groups), "work_groups": schedule.work_groups,
            "options": {k: v for k, v in (schedule.extra or {}).items()
                        if isinstance(v, (int, str, float))},
        },
        "device_model": model.name,
        "memory_params": dataclasses.asdict(MemoryParams.of(model)),
        "arrays": arrays(schedule),
        "work_group": {"linear": chosen, "id": group_coordinates(schedule, chosen),
                       "local_size": list(schedule.local_size),
                       "work_items": schedule.work_group_items},
        "steps": {
            "by": "barrier interval" if by_barriers else "iterations",
            "iterations_per_step": None if by_barriers else step_iterations,
            "list": [{"step": step, "accesses": [
                {"space": space, "direction": direction, "array": array, **acc.to_dict()}
                for (space, direction, array), acc in accesses.items()],
                "by_work_item": [
                    {"direction": direction, "array": array, "work_items": entries}
                    for (direction, array), entries in per_item.get(step, {}).items()]}
                for step, accesses in sorted(steps.items())],
        },
        "reuse": reuse,
        "counts": result.counts.to_dict(),
        "closed_form": formula,
        "closed_form_derived": derived_summary(formula),
        "sites": sites,
        "samples": [s.to_dict() for s in observer.samples.values()],
        "memory": memory,
        "hazards": [h.to_dict() for h in result.hazards],
        "time": _time(schedule, model, registers_per_work_item),
    }
