"""Traffic counters: observers of the engine's access stream.

The engine executes; observers only count. Every load and store of one statement reaches
:meth:`Observer.on_access` as one :class:`AccessEvent` covering all work-items of the current
batch of work-groups (and, inside a vectorized loop, a block of iterations).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from tiletraffic.simulator.ir.nodes import FLOAT_BYTES, HALF_BYTES


@dataclass
class AccessEvent:
    """One load or store statement executed by a batch of work-groups.

    Attributes:
        space: ``"global"`` or ``"local"``.
        direction: ``"load"`` or ``"store"``.
        array: array name.
        array_size: elements in the array.
        index: element indices, an int64 array broadcastable to ``shape``.
        mask: which (work-group, work-item, iteration) entries execute the access, a bool
            array broadcastable to ``shape``.
        shape: ``(G, L, I)``: work-groups in the batch, work-items per work-group,
            iterations in the block (1 outside vectorized loops).
        group_index: linear work-group ids of the batch, shape ``(G,)``.
        site: the statement, as text (``"store x_local[lid]"``): what hazards of this
            access are merged by.
        vector_width: floats per access of each work-item (1: scalar; 2 or 4: one
            ``float2``/``float4`` instruction). For a vector access the iteration axis holds
            ``vector_width`` consecutive entries per iteration, one per element, so that
            ``index`` and ``mask`` list every element touched.
        merge_iterations: whether the iteration axis is a block of a vectorized loop,
            whose consecutive iterations a device model may merge into vector loads
            (``MemoryObserver``'s ``local_vector_words``); ``False`` for the blocks of a
            loop run blocked by :mod:`simulator.engine.accelerators.loop_blocks`, whose iterations count as
            separate instructions exactly as when executed one by one.
        component: for one ``vloadn``/``vstoren`` of global memory, which the engine
            announces as one scalar event per component (the loads the compiler emits where
            it cannot prove the vector's alignment), the component this event is (0 to n-1);
            0 for every other event. The IR's one statement is one instruction of the
            kernel's own code (Oclgrind's count), so an instruction count takes component 0
            only.
        element_bytes: bytes per element of the array (2 for ``half`` storage, else 4);
            an element's byte address is ``index * element_bytes``.
    """

    space: str
    direction: str
    array: str
    array_size: int
    index: np.ndarray
    mask: np.ndarray
    shape: tuple[int, int, int]
    group_index: np.ndarray
    site: str = ""
    vector_width: int = 1
    merge_iterations: bool = True
    component: int = 0
    element_bytes: int = 4


def same_in_every_group(values) -> bool:
    """Whether an index or mask broadcastable to ``(G, L, I)`` is the same for every
    work-group (no work-group axis, or one of length 1)."""
    return np.ndim(values) < 3 or np.shape(values)[0] == 1


def as_3d(values) -> np.ndarray:
    """``values`` (broadcastable to ``(G, L, I)``) with leading axes of length 1 added."""
    values = np.asarray(values)
    return values.reshape((1,) * (3 - values.ndim) + values.shape)


def gather_words(table: np.ndarray, index) -> np.ndarray:
    """The words of ``table`` (one row per work-group, ``(G, words)``) at ``index`` (integers
    within a row, broadcastable to ``(G, L, I)``): shape ``(G,) + index``'s last two axes
    (broadcast). One gather of columns where ``index`` is the same in every work-group, else
    one gather along each row."""
    index = as_3d(index)
    if index.shape[0] > 1 and (index == index[:1]).all():
        index = index[:1]
    rows = table.shape[0]
    if index.shape[0] == 1:
        return table[:, index[0].reshape(-1)].reshape((rows,) + index.shape[1:])
    flat = np.broadcast_to(index, (rows,) + index.shape[1:]).reshape(rows, -1)
    return np.take_along_axis(table, flat, axis=1).reshape((rows,) + index.shape[1:])


def compact_mask(mask: np.ndarray) -> np.ndarray:
    """``mask`` (a ``(G, L, I)`` array) with each axis along which it does not change cut to
    length 1: the same mask once broadcast (``mask`` itself when nothing is cut)."""
    if mask.ndim != 3:
        return mask
    for axis in (0, 1, 2):
        if mask.shape[axis] > 1:
            first = mask[(slice(None),) * axis + (slice(0, 1),)]
            if (mask == first).all():
                mask = first
    return mask


def count_per_group(mask: np.ndarray, shape: tuple[int, int, int]) -> np.ndarray:
    """Number of true entries per work-group of a mask broadcastable to ``shape`` (G, L, I).

    Axes of length 1 in ``mask`` are counted as repeated, without materializing them.
    Returns an int64 array of shape ``(G,)``.
    """
    mask = np.asarray(mask, dtype=bool)
    if mask.ndim == 0:
        return np.full(shape[0], shape[1] * shape[2] if mask else 0, dtype=np.int64)
    mask = as_3d(mask)
    factor = 1
    for ax in (1, 2):
        if mask.shape[ax] == 1:
            factor *= shape[ax]
    per = mask.sum(axis=(1, 2), dtype=np.int64) * factor
    return np.broadcast_to(per, (shape[0],)).copy()


class Observer:
    """Base class of observers; override what you need."""

    def on_batch(self, group_index: np.ndarray, work_items: int,
                 weights: np.ndarray | None = None) -> None:
        """A new batch of work-groups starts (fresh local memory). ``weights[g]`` is how
        many work-groups batch work-group ``g`` stands for (work-group classes); ``None``
        means one each."""

    def on_access(self, event: AccessEvent) -> None:
        """A load or store statement executed."""

    def on_barrier(self, group_index: np.ndarray, arrived: np.ndarray) -> None:
        """A barrier: ``arrived[g]`` work-items of batch work-group ``g`` reached it."""

    def on_global_fence(self, group_index: np.ndarray, arrived: np.ndarray) -> None:
        """The barrier just announced by :meth:`on_barrier` also fences global memory
        (``CLK_GLOBAL_MEM_FENCE``): global accesses of the work-groups that arrived are
        ordered across it, within their work-group."""

    def on_flop(self, group_index: np.ndarray, flop_per_group: np.ndarray) -> None:
        """Floating-point operations executed, per work-group of the batch."""

    def on_hazardous_store(self, array: str, words: np.ndarray) -> None:
        """A store reported as a hazard (out of bounds in some dimension, misaligned) and
        skipped by the simulator would write these words of global ``array`` (flat indices
        inside the buffer, any shape) on a device."""

    def on_finish(self) -> None:
        """Every work-group has run."""


@dataclass
class TrafficCounts:
    """Exact traffic of one launch, counted by executing the schedule.

    Elements are float32 (4 bytes), or float16 (2 bytes) in the buffers named in
    ``half_buffers`` (half storage; bytes count them at 2). ``barriers`` counts work-group barriers: one per
    work-group per barrier it executes. ``flop`` counts executed float32 operations (``+``,
    ``-``, ``*``, ``/``, each built-in call and select one; a negation none), padded
    (out-of-range) work-items included. ``global_load_elems_per_tile`` is the
    global loads of the busiest work-group, i.e. of one full output tile. Accesses reported
    as out-of-bounds hazards (in ``"report"`` mode) are skipped and not counted.
    """

    global_load_elems: int = 0
    global_store_elems: int = 0
    local_load_elems: int = 0
    local_store_elems: int = 0
    barriers: int = 0
    flop: int = 0
    work_groups: int = 0
    global_load_elems_by_buffer: dict[str, int] = field(default_factory=dict)
    global_store_elems_by_buffer: dict[str, int] = field(default_factory=dict)
    global_load_elems_per_tile: int = 0

    half_buffers: tuple[str, ...] = ()

    def _bytes(self, elems: int, by_buffer: dict[str, int]) -> int:
        halves = sum(by_buffer.get(name, 0) for name in set(self.half_buffers))
        return elems * FLOAT_BYTES - halves * (FLOAT_BYTES - HALF_BYTES)

    @property
    def global_load_bytes(self) -> int:
        """Bytes loaded from global memory (4 per float, 2 per half element)."""
        return self._bytes(self.global_load_elems, self.global_load_elems_by_buffer)

    @property
    def global_store_bytes(self) -> int:
        """Bytes stored to global memory (4 per float, 2 per half element)."""
        return self._bytes(self.global_store_elems, self.global_store_elems_by_buffer)

    def to_dict(self) -> dict:
        """JSON-ready mapping with the documented keys."""
        return {
            "global_load_elems": self.global_load_elems,
            "global_store_elems": self.global_store_elems,
            "global_load_bytes": self.global_load_bytes,
            "global_store_bytes": self.global_store_bytes,
            "local_load_elems": self.local_load_elems,
            "local_store_elems": self.local_store_elems,
            "barriers": self.barriers,
            "flop": self.flop,
            "work_groups": self.work_groups,
            "global_load_elems_by_buffer": dict(self.global_load_elems_by_buffer),
            "global_store_elems_by_buffer": dict(self.global_store_elems_by_buffer),
            "global_load_elems_per_tile": self.global_load_elems_per_tile,
        }


class TrafficCounter(Observer):
    """Counts loads, stores, barriers and FLOPs, in total, per buffer and per work-group.

    Args:
        total_groups: work-groups in the launch (for the per-work-group arrays).
        global_arrays: names of the global buffers, in signature order.
        read_map_sizes: if given, ``{buffer: elements}`` of global inputs for which to keep a
            map of how many times each element was read.
        half_buffers: names of the global buffers of half storage (2 bytes an element).
    """

    def __init__(self, total_groups: int, global_arrays: list[str],
                 read_map_sizes: dict[str, int] | None = None,
                 half_buffers: tuple[str, ...] = ()):
        self.counts = TrafficCounts(work_groups=total_groups, half_buffers=tuple(half_buffers))
        self.counts.global_load_elems_by_buffer = {a: 0 for a in global_arrays}
        self.counts.global_store_elems_by_buffer = {a: 0 for a in global_arrays}
        self.global_loads_per_group = np.zeros(total_groups, dtype=np.int64)
        self.read_maps = {k: np.zeros(v, dtype=np.int64) for k, v in (read_map_sizes or {}).items()}
        self.weights: np.ndarray | None = None

    def on_batch(self, group_index, work_items, weights=None) -> None:
        self.weights = weights

    def _total(self, per_group: np.ndarray) -> int:
        return int(per_group.sum() if self.weights is None else per_group @ self.weights)

    def on_access(self, ev: AccessEvent) -> None:
        per_group = count_per_group(ev.mask, ev.shape)
        n = self._total(per_group)
        c = self.counts
        if ev.space == "global":
            if ev.direction == "load":
                c.global_load_elems += n
                c.global_load_elems_by_buffer[ev.array] += n
                self.global_loads_per_group[ev.group_index] += per_group
                if ev.array in self.read_maps and n:
                    if self.weights is not None:
                        raise ValueError("read maps need every work-group executed")
                    idx, mask = np.broadcast_arrays(ev.index, ev.mask)
                    self.read_maps[ev.array] += np.bincount(
                        idx[mask], minlength=ev.array_size)[: ev.array_size]
            else:
                c.global_store_elems += n
                c.global_store_elems_by_buffer[ev.array] += n
        elif ev.direction == "load":
            c.local_load_elems += n
        else:
            c.local_store_elems += n

    def on_barrier(self, group_index: np.ndarray, arrived: np.ndarray) -> None:
        self.counts.barriers += self._total((arrived > 0).astype(np.int64))

    def on_flop(self, group_index: np.ndarray, flop_per_group: np.ndarray) -> None:
        self.counts.flop += self._total(flop_per_group)

    def finish(self) -> TrafficCounts:
        """Final counts (also sets the per-tile maximum)."""
        if self.global_loads_per_group.size:
            self.counts.global_load_elems_per_tile = int(self.global_loads_per_group.max())
        return self.counts


def added(parts: list, largest: tuple[str, ...] = ()):
    """One dataclass of counts (:class:`TrafficCounts`, ``MemoryCounts``) for launches run
    one after another: every field added, dicts added key by key, the fields named in
    ``largest`` the largest of the parts' instead. ``parts`` must not be empty."""
    cls = type(parts[0])
    total = cls()
    for part in parts:
        for f in fields(cls):
            mine, theirs = getattr(total, f.name), getattr(part, f.name)
            if f.name in largest:
                setattr(total, f.name, max(mine, theirs))
            elif isinstance(theirs, dict):
                merged = dict(mine)
                for key, value in theirs.items():
                    merged[key] = merged.get(key, 0) + value
                setattr(total, f.name, merged)
            else:
                setattr(total, f.name, mine + theirs)
    return total


def add_counts(parts: list[TrafficCounts]) -> TrafficCounts:
    """The counts of launches run one after another: every count added, the per-buffer
    counts added by buffer name, ``global_load_elems_per_tile`` the largest of them (the
    busiest work-group of any kernel)."""
    return added(parts, largest=("global_load_elems_per_tile",))
