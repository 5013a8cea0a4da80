"""What one work-group does, step by step: the observer behind ``tiletraffic explain``.

An observer of the engine's access stream (:class:`simulator.observers.counters.Observer`), numpy only.
For one chosen work-group it records which elements of every array its work-items load and
store in each *step*: a barrier interval (how many barriers the work-group has passed) for
a schedule with barriers, or a block of ``step_iterations`` iterations of each load
statement (stores then belong to the step of the latest load), so that a naive kernel's
steps cover the same stretch of the reduction as a tiled kernel's tile steps. For every
load and store statement (``AccessEvent.site``) it also keeps

* the memory-system counts of that statement over the whole launch, counted by a
  :class:`simulator.observers.memory.MemoryObserver` of the same device parameters (their sum over
  statements is the launch's :class:`simulator.observers.memory.MemoryCounts`), and
* one *sample instruction*: the statement's first execution by the chosen work-group, its
  first sub-group with an active work-item, its first iteration (the first
  ``local_vector_words`` iterations where the device model merges them into one vector
  load, every element of a ``float2``/``float4``): each lane's element indices and that one
  request's figures, counted by a fresh ``MemoryObserver`` (so the picture of one request
  and the model's totals come from the same code).

Element indices are flat (row-major) indices into the array; work-items are flattened
local ids (dimension 0 fastest).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from tiletraffic.simulator.observers.counters import AccessEvent, Observer
from tiletraffic.simulator.observers.memory import MemoryObserver

WORK_ITEMS_NAMED = 8
"""Work-items named per element of a step (the count is always exact)."""


@dataclass
class MemoryParams:
    """The device model's memory-system parameters (:class:`MemoryObserver`'s arguments)."""

    sub_group_size: int = 32
    sector_bytes: int = 32
    line_bytes: int = 128
    local_banks: int = 32
    bank_bytes: int = 4
    local_vector_words: int = 1
    vector_min_wavefronts: int = 1

    def observer(self) -> MemoryObserver:
        return MemoryObserver(self.sub_group_size, self.sector_bytes, self.line_bytes,
                              self.local_banks, self.bank_bytes, self.local_vector_words,
                              self.vector_min_wavefronts)

    @classmethod
    def of(cls, model) -> "MemoryParams":
        """The parameters of a :class:`simulator.model.device_model.DeviceModel`."""
        return cls(model.sub_group_size, model.sector_bytes, model.line_bytes,
                   model.local_banks, model.bank_bytes, model.local_vector_words,
                   model.local_vector_min_wavefronts)


@dataclass
class StepAccesses:
    """One array's accesses by the chosen work-group in one step, one entry per element.

    ``elements``: flat indices (sorted); ``counts``: work-item accesses of each;
    ``work_items``: up to :data:`WORK_ITEMS_NAMED` local ids of the work-items that made
    them (smallest first)."""

    elements: list[int]
    counts: list[int]
    work_items: list[list[int]]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class SampleInstruction:
    """One sub-group's execution of one load or store statement (one request).

    ``lanes``: the sub-group's work-items (local ids); ``elements[i]``: the element indices
    lane ``i`` touches (empty: inactive lane); ``figures``: that request's
    :class:`simulator.observers.memory.MemoryCounts` as a dict; ``interval``: the barrier interval it
    ran in, ``iteration_step``: its step counted in iterations (module docstring)."""

    space: str
    direction: str
    array: str
    site: str
    sub_group: int
    interval: int
    iteration_step: int
    vector_width: int
    lanes: list[int]
    elements: list[list[int]]
    figures: dict
    element_bytes: int = 4
    """Bytes per element of the array (2 for ``half`` storage): an element's byte address
    is its index times this."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class SiteCounts:
    """A statement's counts over the whole launch."""

    space: str
    direction: str
    array: str
    site: str
    memory: dict
    work_item_accesses: int = 0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class ExplainObserver(Observer):
    """Records the chosen work-group's accesses per step, and per statement the launch's
    memory-system counts and one sample request (see the module docstring).

    Args:
        work_group: linear id of the chosen work-group (dimension 0 fastest).
        memory: the device model's memory-system parameters.
        step_iterations: iterations of a load statement per step, for the steps counted in
            iterations (at least 1). Both kinds of step are recorded (:meth:`steps`).

    Raises:
        ValueError: ``work_group`` negative or ``step_iterations`` below 1.
    """

    def __init__(self, work_group: int, memory: MemoryParams, *, step_iterations: int = 1):
        if work_group < 0:
            raise ValueError(f"work_group must be >= 0, got {work_group}")
        if step_iterations < 1:
            raise ValueError(f"step_iterations must be >= 1, got {step_iterations}")
        self.work_group = work_group
        self.params = memory
        self.step_iterations = step_iterations
        self._pos: int | None = None
        self._epoch = 0
        self._last_step = 0
        self._iterations: dict[tuple, int] = {}
        self._pairs: dict[tuple, list[tuple[np.ndarray, np.ndarray]]] = {}
        self._site_memory: dict[tuple, MemoryObserver] = {}
        self._site_accesses: dict[tuple, int] = {}
        self.samples: dict[tuple, SampleInstruction] = {}
        self.barriers_passed = 0
        self.seen = False

    def on_batch(self, group_index, work_items, weights=None) -> None:
        if weights is not None:
            raise ValueError("explain needs every work-group executed (no work-group classes)")
        hit = np.flatnonzero(np.asarray(group_index) == self.work_group)
        self._pos = int(hit[0]) if hit.size else None
        self.seen = self.seen or self._pos is not None
        for obs in self._site_memory.values():
            obs.on_batch(group_index, work_items, weights)

    def on_barrier(self, group_index, arrived) -> None:
        for obs in self._site_memory.values():
            obs.on_barrier(group_index, arrived)
        if self._pos is not None and arrived[self._pos] > 0:
            self._epoch += 1
            self.barriers_passed += 1

    def on_finish(self) -> None:
        for obs in self._site_memory.values():
            obs.on_finish()

    def on_access(self, ev: AccessEvent) -> None:
        key = (ev.space, ev.direction, ev.array, ev.site)
        if ev.space == "local" and ev.direction == "store":
            # a local store ends the merging of every statement's held loads, as in the
            # launch's one MemoryObserver
            for obs in self._site_memory.values():
                obs.count_held_loads()
        obs = self._site_memory.get(key)
        if obs is None:
            obs = self._site_memory[key] = self.params.observer()
            obs.on_batch(ev.group_index, ev.shape[1])
        obs.on_access(ev)
        mask = np.broadcast_to(ev.mask, ev.shape)
        self._site_accesses[key] = self._site_accesses.get(key, 0) + int(mask.sum())
        if self._pos is None:
            return
        index = np.broadcast_to(ev.index, ev.shape)[self._pos]        # (L, I)
        active = mask[self._pos]
        if not active.any():
            return
        width = max(1, ev.vector_width)
        iterations = ev.shape[2] // width
        local_ids = np.broadcast_to(np.arange(ev.shape[1])[:, None], ev.shape[1:])
        by_iterations = self._iteration_steps(key, ev.direction, iterations)
        for mode, steps in ((True, np.full(iterations, self._epoch)), (False, by_iterations)):
            entry_steps = np.repeat(steps, width)
            for step in np.unique(entry_steps):
                sel = active & (entry_steps == step)[None, :]
                if sel.any():
                    self._pairs.setdefault(
                        (mode, int(step), ev.space, ev.direction, ev.array), []).append(
                        (index[sel].astype(np.int64), local_ids[sel].astype(np.int64)))
        if key not in self.samples:
            self.samples[key] = self._sample(ev, index, active, self._epoch,
                                             int(by_iterations[0]))

    def _iteration_steps(self, key: tuple, direction: str, iterations: int) -> np.ndarray:
        if direction != "load":
            return np.full(iterations, self._last_step)
        first = self._iterations.get(key, 0)
        self._iterations[key] = first + iterations
        steps = (first + np.arange(iterations)) // self.step_iterations
        self._last_step = max(self._last_step, int(steps[-1]))
        return steps

    def _sample(self, ev: AccessEvent, index: np.ndarray, active: np.ndarray,
                interval: int, iteration_step: int) -> SampleInstruction:
        """The first active sub-group's request of this execution (see the module doc)."""
        p = self.params
        L, I = index.shape
        width = max(1, ev.vector_width)
        if width > 1:
            entries = width
        elif (ev.space == "local" and ev.direction == "load" and p.local_vector_words > 1
              and ev.merge_iterations and I >= p.local_vector_words):
            entries = p.local_vector_words
        else:
            entries = 1
        lanes_active = active[:, :entries].any(axis=1)
        sub_group = int(np.flatnonzero(lanes_active)[0]) // p.sub_group_size
        lanes = np.arange(sub_group * p.sub_group_size, min(L, (sub_group + 1) * p.sub_group_size))
        keep = np.zeros((L, entries), dtype=bool)
        keep[lanes] = active[lanes, :entries]
        one = AccessEvent(ev.space, ev.direction, ev.array, ev.array_size,
                          index[None, :, :entries], keep[None], (1, L, entries),
                          np.array([self.work_group]), ev.site, ev.vector_width,
                          ev.merge_iterations, element_bytes=ev.element_bytes)
        counter = p.observer()
        counter.on_batch(one.group_index, L)
        counter.on_access(one)
        counter.on_finish()
        elements = [[int(e) for e, on in zip(index[lane, :entries], keep[lane]) if on]
                    for lane in lanes]
        return SampleInstruction(ev.space, ev.direction, ev.array, ev.site, sub_group,
                                 interval, iteration_step, width, [int(x) for x in lanes],
                                 elements,
                                 counter.counts.to_dict(), ev.element_bytes)

    def steps(self, by_barriers: bool) -> dict[int, dict[tuple[str, str, str], StepAccesses]]:
        """``{step: {(space, direction, array): StepAccesses}}`` of the chosen work-group,
        steps being barrier intervals (``by_barriers``) or blocks of iterations."""
        out: dict[int, dict] = {}
        for (mode, step, space, direction, array), pairs in sorted(self._pairs.items()):
            if mode != by_barriers:
                continue
            elems = np.concatenate([p[0] for p in pairs])
            items = np.concatenate([p[1] for p in pairs])
            order = np.lexsort((items, elems))
            elems, items = elems[order], items[order]
            unique, first, counts = np.unique(elems, return_index=True, return_counts=True)
            named = [sorted(set(items[f:f + c].tolist()))[:WORK_ITEMS_NAMED]
                     for f, c in zip(first, counts)]
            out.setdefault(step, {})[(space, direction, array)] = StepAccesses(
                unique.tolist(), counts.tolist(), named)
        return out

    def work_item_elements(self, by_barriers: bool, space: str = "global"
                           ) -> dict[int, dict[tuple[str, str], list[list]]]:
        """``{step: {(direction, array): [[local id, [elements, ...]], ...]}}``: the distinct
        elements each work-item of the chosen work-group touches in ``space`` per step
        (work-items and elements ascending)."""
        out: dict[int, dict] = {}
        for (mode, step, sp, direction, array), pairs in sorted(self._pairs.items()):
            if mode != by_barriers or sp != space:
                continue
            elems = np.concatenate([p[0] for p in pairs])
            items = np.concatenate([p[1] for p in pairs])
            pairs_unique = np.unique(np.stack([items, elems], axis=1), axis=0)
            lids, first = np.unique(pairs_unique[:, 0], return_index=True)
            bounds = list(first[1:]) + [len(pairs_unique)]
            out.setdefault(step, {})[(direction, array)] = [
                [int(lid), pairs_unique[f:e, 1].tolist()]
                for lid, f, e in zip(lids, first, bounds)]
        return out

    def sites(self) -> list[SiteCounts]:
        """Every statement's launch-wide counts, in the order first executed."""
        return [SiteCounts(*key, obs.counts.to_dict(), self._site_accesses[key])
                for key, obs in self._site_memory.items()]
