"""Observers of the access stream for the cache and time models (:mod:`simulator.model.prediction`).

* :class:`FootprintObserver`: the distinct 32-byte sectors each work-group loads, per
  global buffer: its L1 misses under a per-work-group footprint (re-reads of a sector by
  the same work-group hit), optionally with pairs of consecutive work-groups sharing one L1;
* :class:`LoadPhaseObserver`: the barrier intervals in which a work-group loads from global
  memory (each ends in a memory latency the work-group cannot hide itself).

Both weight each executed work-group by its class size (:mod:`simulator.engine.accelerators.
classes`). The hooks and array shapes are :class:`simulator.observers.counters.Observer`'s; the other
observers are the traffic counter (:mod:`simulator.observers.counters`), the memory-system counter
(:mod:`simulator.observers.memory`), the stride observer (:mod:`simulator.observers.strides`) and the hazard
detectors (:mod:`simulator.observers.local_races`, :mod:`simulator.observers.global_races`).
"""
from __future__ import annotations

import numpy as np

from tiletraffic.simulator.observers.counters import AccessEvent, Observer
from tiletraffic.simulator.ir.nodes import FLOAT_BYTES


class FootprintObserver(Observer):
    """Distinct sectors loaded per work-group, weighted by work-group classes.

    With ``sharing=2`` and ``offsets`` (element offset of each buffer's loads between
    neighbouring work-groups in dimension 0), a pair of consecutive work-groups shares one
    L1: each work-group is charged half of ``|S ∪ (S + shift)|``, S its own sectors.
    """

    def __init__(self, sector_bytes: int = 32, sharing: int = 1,
                 offsets: dict[str, int | None] | None = None):
        if sharing not in (1, 2):
            raise ValueError(f"L1 sharing of {sharing} work-groups is not modelled (1 or 2)")
        self.sector_bytes = sector_bytes
        self.sharing = sharing
        self.offsets = offsets or {}
        self.sectors_by_buffer: dict[str, float] = {}
        self.own_sectors_by_buffer: dict[str, float] = {}
        self._pending: dict[str, list[np.ndarray]] = {}
        self.weights = None
        self._element_bytes: dict[str, int] = {}

    def on_batch(self, group_index, work_items, weights=None) -> None:
        self._flush()
        self.weights = weights
        self.groups = len(group_index)

    def on_access(self, ev: AccessEvent) -> None:
        if ev.space != "global" or ev.direction != "load" or not np.any(ev.mask):
            return
        shape = ev.shape
        mask = np.broadcast_to(ev.mask, shape)
        self._element_bytes[ev.array] = ev.element_bytes
        sector = np.broadcast_to(np.asarray(ev.index) * ev.element_bytes // self.sector_bytes,
                                 shape)
        keep = _first_of_runs(sector, mask)
        g = np.broadcast_to(np.arange(shape[0]).reshape(-1, 1, 1), shape)[keep]
        self._pending.setdefault(ev.array, []).append(
            _sorted_unique(g * (1 << 40) + sector[keep]))

    def _shift(self, name: str) -> int | None:
        offset = self.offsets.get(name)
        size = self._element_bytes.get(name, FLOAT_BYTES)
        if self.sharing == 1 or offset is None or offset * size % self.sector_bytes:
            return None
        return offset * size // self.sector_bytes

    def _add(self, totals: dict[str, float], name: str, per_group: np.ndarray) -> None:
        """Add the class-weighted sum of ``per_group`` to ``totals[name]``."""
        total = per_group.sum() if self.weights is None else per_group @ self.weights
        totals[name] = totals.get(name, 0) + float(total)

    def _flush(self) -> None:
        for name, parts in self._pending.items():
            keys = _sorted_unique(np.concatenate(parts))
            per_group = np.bincount(keys >> 40, minlength=self.groups).astype(float)
            self._add(self.own_sectors_by_buffer, name, per_group)
            shift = self._shift(name)
            if shift is not None:
                shared = _in_sorted(keys + shift, keys)
                per_group -= np.bincount(keys[shared] >> 40, minlength=self.groups) / 2
            self._add(self.sectors_by_buffer, name, per_group)
        self._pending = {}

    def on_finish(self) -> None:
        self._flush()


def _first_of_runs(sector: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The executed entries of a ``(G, L, I)`` access whose sector differs from that of the
    executed entry before them in work-item (L) and in iteration (I): the first executed
    entry of every (work-group, sector) is among them, so the distinct sectors per
    work-group are those of the kept entries (fewer to sort: neighbouring work-items and
    iterations mostly share sectors)."""
    keep = np.array(mask)
    for axis in (1, 2):
        if sector.shape[axis] > 1:
            later = (slice(None),) * axis + (slice(1, None),)
            earlier = (slice(None),) * axis + (slice(None, -1),)
            keep[later] &= ~((sector[later] == sector[earlier]) & mask[earlier])
    return keep


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of a 1-D integer array, by sorting: the same sorted distinct values.
    (``np.unique`` of numpy >= 2.3 finds them by hashing, slower than a sort on the tens of
    millions of sector keys of a large GEMM.)"""
    s = np.sort(values)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if s.size else s


def _in_sorted(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``np.isin(values, keys)`` for ``keys`` sorted and distinct, by binary search."""
    if not keys.size:
        return np.zeros(values.shape, dtype=bool)
    pos = np.minimum(np.searchsorted(keys, values), keys.size - 1)
    return keys[pos] == values


class LoadPhaseObserver(Observer):
    """Counts, per work-group, the barrier intervals in which it loads from global memory.

    Each such interval ends at a barrier that no work-item passes before the slowest load of
    its work-group has returned: one memory latency the work-group cannot hide itself.
    """

    def __init__(self):
        self.phases = 0
        self.weights = None

    def on_batch(self, group_index, work_items, weights=None) -> None:
        self.weights = weights
        self.loading = np.zeros(len(group_index), dtype=bool)

    def on_access(self, ev: AccessEvent) -> None:
        if ev.space == "global" and ev.direction == "load":
            self.loading |= np.broadcast_to(ev.mask, ev.shape).any(axis=(1, 2))

    def on_barrier(self, group_index, arrived) -> None:
        ended = self.loading & (np.asarray(arrived) > 0)
        per_group = ended.astype(np.int64)
        self.phases += int(per_group.sum() if self.weights is None else per_group @ self.weights)
        self.loading &= ~ended
