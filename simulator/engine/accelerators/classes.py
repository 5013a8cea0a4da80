"""Work-group classes: execute one work-group per class of provably identical traffic.

Applies to a launch counted without values or read maps
(``Accelerators.work_group_classes``; :func:`simulator.engine.simulation.simulate` refuses it
otherwise with an ``InputError``); races in global memory, reads of outputs before a store and
unwritten outputs, which need every work-group, are then not checked.

Two work-groups have identical counts (loads, stores, barriers, FLOPs, requests, sectors,
lines, bank conflicts) when every statement runs under the same masks and every address
differs by the same multiple of 128 bytes (a cache line, hence of a 32-byte sector). The
partition is :func:`.class_safety.class_plan`'s: per NDRange dimension, segments of
work-group ids within which every condition is proved the same, and a period ``p_d`` after
which every address has moved by whole lines; the class of work-group ``g`` is, per
dimension, its segment and, in a segment of several work-groups, ``g_d mod p_d``.

Built-in families are proved as any other schedule. Without a proved plan (a caller that
did not ask :func:`.class_safety.classes_problem`), the segments are the first, interior and
last work-group of each dimension and ``p_d`` is measured on two interior work-groups one
step apart in dimension d (the difference of every access's index one constant per
statement; otherwise, or for small grids, every work-group of that dimension its own class):
that measurement sees only what those two work-groups execute, which is why the counting
paths take the classes only where they are proved.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from tiletraffic.simulator.observers.counters import (AccessEvent, Observer, compact_mask,
                                                      same_in_every_group)
from tiletraffic.simulator.ir.nodes import FLOAT_BYTES, Schedule
from tiletraffic.simulator.engine.accelerators.class_safety import (LINE_BYTES,
                                                                    MIN_GROUPS_FOR_CLASSES,
                                                                    class_plan, default_starts)

__all__ = ["GroupClasses", "group_classes", "load_offsets", "LINE_BYTES",
           "MIN_GROUPS_FOR_CLASSES"]


@dataclass(frozen=True)
class GroupClasses:
    """Representatives (linear work-group ids) and how many work-groups each stands for;
    per NDRange dimension, the first work-group id of each segment (``starts``) and the
    period of the ids within a segment of several work-groups (``periods``: the members of a
    class are its representative's id plus whole periods, within its segment)."""

    representatives: np.ndarray
    weights: np.ndarray
    periods: tuple[int, ...]
    starts: tuple[tuple[int, ...], ...]

    @property
    def total(self) -> int:
        return int(self.weights.sum())


class _StepRecorder(Observer):
    """For each probed pair of batch rows (work-groups ``a``, ``b``) and each access event
    that both execute: (array, direction, whether ``index[b] - index[a]`` is one constant
    where both execute, its first value)."""

    def __init__(self, rows: list[tuple[int, int]]):
        self.rows = rows
        self.found: list[list[tuple[str, str, bool, int]]] = [[] for _ in rows]
        self._a = np.array([a for a, _ in rows], dtype=np.int64)
        self._b = np.array([b for _, b in rows], dtype=np.int64)

    def on_access(self, ev: AccessEvent) -> None:
        index, mask = np.asarray(ev.index), compact_mask(np.asarray(ev.mask))
        if same_in_every_group(index) and same_in_every_group(mask):
            # the same entries and indices in every work-group: each pair that executes
            # the access (any entry) has the one difference 0
            if mask.any():
                for found in self.found:
                    found.append((ev.array, ev.direction, True, 0))
            return
        # all pairs at once: (pairs, L, I) arrays; the first difference is that of the first
        # entry (row-major) both work-groups execute
        index = np.broadcast_to(index, ev.shape)
        mask = np.broadcast_to(mask, ev.shape)
        both = (mask[self._a] & mask[self._b]).reshape(len(self.rows), -1)
        executed = both.any(axis=1)
        if not executed.any():
            return
        diff = (index[self._b] - index[self._a]).reshape(len(self.rows), -1)
        first = diff[np.arange(len(self.rows)), both.argmax(axis=1)]
        constant = ((diff == first[:, None]) | ~both).all(axis=1)
        for p in np.nonzero(executed)[0]:
            self.found[p].append((ev.array, ev.direction, bool(constant[p]), int(first[p])))


_PROBES: "weakref.WeakKeyDictionary[Schedule, dict]" = weakref.WeakKeyDictionary()
"""Per schedule, the step differences of every probed pair (probing runs once)."""

PROBE_BLOCK_GROUPS = 2
"""Vectorized loops of the probe batch run in the blocks of a batch of this many
work-groups: those of the two work-groups of one pair, executed on their own."""


def _probe_pairs(schedule: Schedule) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(base, base one step further in one dimension) pairs that :func:`group_classes` and
    :func:`load_offsets` (dimensions 0 and 1) compare."""
    ng = schedule.num_groups
    pairs = []
    base = [1 if n >= MIN_GROUPS_FOR_CLASSES else 0 for n in ng]
    for d, n in enumerate(ng):
        if n >= MIN_GROUPS_FOR_CLASSES:
            pairs.append((tuple(base), tuple(v + (i == d) for i, v in enumerate(base))))
    for d in (0, 1):
        if d < len(ng) and ng[d] >= 2:
            start = [1 if n >= 3 else 0 for n in ng]
            start[d] = 0
            pairs.append((tuple(start), tuple(v + (i == d) for i, v in enumerate(start))))
    return pairs


def _step_differences(schedule: Schedule, dim: int, base: list[int], run_groups):
    """For each access statement that work-group ``base`` and its neighbour one step further
    in ``dim`` both execute: (array, direction, whether the index difference is one
    constant, its first value).

    Every pair of :func:`_probe_pairs` is executed in one batch the first time (each
    work-group's execution does not depend on the others of its batch, and vectorized loops
    keep the blocks of a two-work-group batch), then taken from the cache.
    """
    ng = schedule.num_groups
    pair = (tuple(base), tuple(v + (i == dim) for i, v in enumerate(base)))
    probes = _PROBES.get(schedule)
    if probes is None or pair not in probes:
        pairs = _probe_pairs(schedule)
        if pair not in pairs:
            pairs.append(pair)
        linear = sorted({sum(v * math.prod(ng[:d]) for d, v in enumerate(ids))
                         for p in pairs for ids in p})
        row = {g: r for r, g in enumerate(linear)}

        def row_of(ids):
            return row[sum(v * math.prod(ng[:d]) for d, v in enumerate(ids))]

        rec = _StepRecorder([(row_of(a), row_of(b)) for a, b in pairs])
        run_groups(np.array(linear), rec, block_groups=PROBE_BLOCK_GROUPS)
        probes = dict(zip(pairs, rec.found))
        _PROBES[schedule] = probes
    return probes[pair]


def _period(schedule: Schedule, dim: int, base: list[int], run_groups) -> int | None:
    """Steps of work-group id in ``dim`` after which every address moves by whole lines."""
    period = 1
    sizes = {a.name: a.element_bytes for a in schedule.arrays}
    for name, _, constant, diff in _step_differences(schedule, dim, base, run_groups):
        if not constant:
            return None
        offset = diff * sizes.get(name, FLOAT_BYTES) % LINE_BYTES
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
    for array, direction, constant, diff in _step_differences(schedule, dim, base,
                                                              run_groups):
        if direction != "load" or array not in {a.name for a in schedule.arrays}:
            continue
        value = diff if constant else None
        if array in found and found[array] != value:
            value = None
        found[array] = value
    return found


def group_classes(schedule: Schedule, run_groups) -> GroupClasses:
    """Classes of the work-groups of ``schedule``: those of
    :func:`.class_safety.class_plan`, or, where it gives none (a schedule the classes are
    not proved for, or a built-in family), the first / interior / last work-group of each
    dimension with measured periods.

    ``run_groups(linear_ids, observer, block_groups=None)`` executes those work-groups of
    ``schedule`` (counts only) with an extra observer
    (:func:`simulator.engine.simulation.probe_runner`); it is used to measure the address
    periods (once per schedule, shared with :func:`load_offsets`).
    """
    ng = schedule.num_groups
    plan = class_plan(schedule)
    starts = plan.starts if plan is not None else default_starts(ng)
    periods = list(plan.periods) if plan is not None else None
    if periods is None:
        base = [1 if n >= MIN_GROUPS_FOR_CLASSES else 0 for n in ng]
        periods = []
        for d, n in enumerate(ng):
            p = _period(schedule, d, base, run_groups) if n >= MIN_GROUPS_FOR_CLASSES \
                else None
            periods.append(p if p is not None else n)
    # a class is one class of each dimension: per dimension, the first work-group id of each
    # of its classes and how many ids it holds; representatives are the combinations of
    # those first ids (each the class's smallest linear id), in linear order
    reps = np.zeros(1, dtype=np.int64)
    weights = np.ones(1, dtype=np.int64)
    stride = 1
    for n, p, first in zip(ng, periods, starts):
        lowest, counts = [], []
        for s, e in zip(first, (*first[1:], n)):     # each segment: one class per residue
            r = np.arange(min(p, e - s), dtype=np.int64)
            lowest.append(s + r)
            counts.append(-(-(e - s - r) // p))
        lowest, counts = np.concatenate(lowest), np.concatenate(counts)
        reps = (reps[:, None] + lowest[None, :] * stride).reshape(-1)
        weights = (weights[:, None] * counts[None, :]).reshape(-1)
        stride *= n
    order = np.argsort(reps, kind="stable")
    return GroupClasses(reps[order], weights[order], tuple(periods),
                        tuple(tuple(int(v) for v in s) for s in starts))
