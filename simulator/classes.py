"""Work-group classes: execute one work-group per class of provably identical traffic.

Two work-groups have identical counts (loads, stores, barriers, FLOPs, requests, sectors,
lines, bank conflicts) when every statement runs under the same masks and every address
differs by the same multiple of 128 bytes (a cache line, hence of a 32-byte sector). For the
schedules here, guards compare global ids with the matrix sizes, so masks can differ only in
the first and last work-group of each NDRange dimension; addresses are affine in the
work-group id. The class of work-group ``g`` is therefore, per dimension d,
``(position of g_d: first / interior / last, g_d mod p_d)``, where ``p_d`` is the period
after which the byte offset of every access, per step of ``g_d``, is a multiple of 128.

``p_d`` is measured, not assumed: two interior work-groups one step apart in dimension d are
executed and the difference of every access's index is checked to be one constant per
statement; otherwise (or for small grids) every work-group of that dimension is its own
class. The tests prove the classes against full execution for every family over drawn
shapes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .counters import AccessEvent, Observer
from .schedule import FLOAT_BYTES, Schedule

LINE_BYTES = 128
MIN_GROUPS_FOR_CLASSES = 5
"""Below this many work-groups in a dimension, each is its own class there."""


@dataclass(frozen=True)
class GroupClasses:
    """Representatives (linear work-group ids) and how many work-groups each stands for."""

    representatives: np.ndarray
    weights: np.ndarray
    periods: tuple[int, ...]

    @property
    def total(self) -> int:
        return int(self.weights.sum())


class _IndexRecorder(Observer):
    def __init__(self):
        self.events: list[tuple[str, str, np.ndarray, np.ndarray]] = []

    def on_access(self, ev: AccessEvent) -> None:
        shape = ev.shape
        self.events.append((ev.array, ev.direction, np.broadcast_to(ev.index, shape).copy(),
                            np.broadcast_to(ev.mask, shape).copy()))


def _step_differences(schedule: Schedule, dim: int, base: list[int], run_groups):
    """For each access statement: (array, direction, index differences) between work-group
    ``base`` and its neighbour one step further in ``dim``, where both execute it."""
    ng = schedule.num_groups
    step = list(base)
    step[dim] += 1
    linear = [sum(v * math.prod(ng[:d]) for d, v in enumerate(ids)) for ids in (base, step)]
    rec = _IndexRecorder()
    run_groups(np.array(linear), rec)
    out = []
    for array, direction, index, mask in rec.events:
        both = mask[0] & mask[1]
        if both.any():
            out.append((array, direction, (index[1] - index[0])[both]))
    return out


def _period(schedule: Schedule, dim: int, base: list[int], run_groups) -> int | None:
    """Steps of work-group id in ``dim`` after which every address moves by whole lines."""
    period = 1
    for _, _, diff in _step_differences(schedule, dim, base, run_groups):
        if (diff != diff.flat[0]).any():
            return None
        offset = int(diff.flat[0]) * FLOAT_BYTES % LINE_BYTES
        period = math.lcm(period, LINE_BYTES // math.gcd(offset, LINE_BYTES))
    return period


def load_offsets(schedule: Schedule, run_groups, dim: int = 0) -> dict[str, int | None]:
    """Element offset, per global buffer, between the loads of two neighbouring work-groups
    in NDRange dimension ``dim`` (``None`` where it is not one constant)."""
    ng = schedule.num_groups
    if dim >= len(ng) or ng[dim] < 2:
        return {}
    base = [1 if n >= 3 else 0 for n in ng]
    base[dim] = 0
    found: dict[str, int | None] = {}
    for array, direction, diff in _step_differences(schedule, dim, base, run_groups):
        if direction != "load" or array not in {a.name for a in schedule.arrays}:
            continue
        value = int(diff.flat[0]) if (diff == diff.flat[0]).all() else None
        if array in found and found[array] != value:
            value = None
        found[array] = value
    return found


def group_classes(schedule: Schedule, run_groups) -> GroupClasses:
    """Classes of the work-groups of ``schedule``.

    ``run_groups(linear_ids, observer)`` executes those work-groups (counts only) with an
    extra observer; it is used to measure the address periods.
    """
    ng = schedule.num_groups
    base = [1 if n >= MIN_GROUPS_FOR_CLASSES else 0 for n in ng]
    periods = []
    for d, n in enumerate(ng):
        p = _period(schedule, d, base, run_groups) if n >= MIN_GROUPS_FOR_CLASSES else None
        periods.append(p if p is not None else n)
    ids = np.arange(schedule.work_groups, dtype=np.int64)
    key = np.zeros_like(ids)
    rest = ids.copy()
    for n, p in zip(ng, periods):
        g = rest % n
        rest //= n
        if p >= n:
            part, size = g, n
        else:
            pos = np.where(g == 0, 0, np.where(g == n - 1, 2, 1))
            part, size = pos * p + g % p, 3 * p
        key = key * size + part
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    order = np.argsort(first)
    return GroupClasses(first[order], counts[order].astype(np.int64), tuple(periods))
