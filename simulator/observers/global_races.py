"""Data races in global memory, found from who touched each word, never from the values.

OpenCL 1.2 (§3.3.1 and §6.12.8) orders global memory between work-items of one work-group
only at a barrier with ``CLK_GLOBAL_MEM_FENCE``, and never between work-groups. So:

- *between work-groups*: two accesses of one global word by work-items of different
  work-groups, at least one a store, race, wherever they are in the kernel;
- *within a work-group*: two accesses of one word by different work-items of one work-group,
  at least one a store, race unless a global-fence barrier separates them. A plain
  ``barrier(CLK_LOCAL_MEM_FENCE)`` (:class:`~simulator.ir.nodes.Barrier` without
  ``global_fence``) does not: Oclgrind's race detector (``plugins/RaceDetector.cpp``,
  ``workGroupBarrier``) makes the same distinction.

A work-item touching a word several times is no race. Arrays declared ``in`` are never
tracked: the IR refuses a store into them, so their loads cannot race.

How, vectorized (no loop over work-items): every work-item has a key, ``linear work-group id
× work-items per work-group + local id``; for each tracked word the smallest and the largest
key of its stores and of its loads are kept (``np.minimum.at`` / ``np.maximum.at``). Keys of
one work-group are consecutive, so the smallest and largest keys lie in one work-group
exactly when all of them do; one work-item touched the word exactly when the smallest and
the largest key agree. Kernel-wide extremes give the races between work-groups (kept across
batches of work-groups, so the full launch is needed: counting by work-group classes runs
only representatives and skips this check); the extremes since the last global fence give
the races within a work-group. Lock-step execution, which hides a race from the result,
does not hide it here. Memory: two keys (int32, or int64 for launches of 2**31 work-items or
more) per word of every array the kernel stores into, per direction it accesses it in.

Unlike Oclgrind, a write-write race whose two stores write the same value is reported too
(Oclgrind ignores such "uniform" writes unless ``OCLGRIND_UNIFORM_WRITES`` is set).
"""
from __future__ import annotations

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk_statements
from tiletraffic.simulator.observers.counters import AccessEvent, Observer
from tiletraffic.simulator.observers.hazards import Hazard, HazardLog, array_dims, element_text

_FREE = {"store": "stored", "load": "read"}


class _Extremes:
    """Smallest and largest work-item key per word, per direction (allocated when used)."""

    def __init__(self, size: int, dtype):
        self.size, self.dtype = size, dtype
        self.lo: dict[str, np.ndarray] = {}
        self.hi: dict[str, np.ndarray] = {}

    def add(self, direction: str, words: np.ndarray, keys: np.ndarray) -> None:
        if direction not in self.lo:
            self.lo[direction] = np.full(self.size, np.iinfo(self.dtype).max, self.dtype)
            self.hi[direction] = np.full(self.size, -1, self.dtype)
        np.minimum.at(self.lo[direction], words, keys)
        np.maximum.at(self.hi[direction], words, keys)

    def get(self, direction: str):
        """(smallest, largest, set) per word; unset words have largest -1."""
        if direction not in self.lo:
            empty = np.full(self.size, -1, self.dtype)
            return empty, empty, np.zeros(self.size, bool)
        hi = self.hi[direction]
        return self.lo[direction], hi, hi >= 0

    def reset(self, words: np.ndarray) -> None:
        for direction in self.lo:
            self.lo[direction][words] = np.iinfo(self.dtype).max
            self.hi[direction][words] = -1


class GlobalRaceDetector(Observer):
    """Reports data races in global memory (see the module docstring) as ``data-race``
    hazards, one per array, scope (between / within work-groups) and kind (read-write /
    write-write), counting racing *words* per work-group of the store.

    Args:
        schedule: the schedule (every work-group of it must run, in any batches).
        log: where hazards go.
        sizes: elements of each global array, by name.
    """

    def __init__(self, schedule, log: HazardLog, sizes: dict[str, int]):
        self.schedule, self.log = schedule, log
        self.items = schedule.work_group_items
        total = schedule.work_groups * self.items
        dtype = np.int32 if total < np.iinfo(np.int32).max else np.int64
        self.dtype = dtype
        self.tracked = {a.name for a in schedule.arrays if a.is_output}
        self.kernel = {n: _Extremes(sizes[n], dtype) for n in self.tracked}
        self.fenced = _has_global_fence(schedule.body)
        # without a global fence the interval of a work-group is the whole kernel
        self.interval = ({n: _Extremes(sizes[n], dtype) for n in self.tracked}
                         if self.fenced else self.kernel)
        self.sites: dict[tuple[str, str], list[str]] = {}
        self.group_index = np.zeros(0, np.int64)
        self.storers: dict[str, list[np.ndarray]] = {n: [] for n in self.tracked}
        """Per array: ``word * work_groups + work-group`` of every store to a word that
        more than one work-group stores, noted as the stores come."""

    def on_batch(self, group_index, work_items, weights=None) -> None:
        if self.fenced:
            self._close_intervals(None)
        self.group_index = np.asarray(group_index, dtype=np.int64)

    def on_access(self, ev: AccessEvent) -> None:
        if ev.space != "global" or ev.array not in self.tracked:
            return
        mask = np.broadcast_to(ev.mask, ev.shape)
        g, li, it = np.nonzero(mask)
        if not len(g):
            return
        words = np.broadcast_to(ev.index, ev.shape)[g, li, it]
        keys = (self.group_index[g] * self.items + li).astype(self.dtype)
        if ev.direction == "store":
            self._note_storers(ev.array, words, self.group_index[g])
        self.kernel[ev.array].add(ev.direction, words, keys)
        if self.fenced:
            self.interval[ev.array].add(ev.direction, words, keys)
        seen = self.sites.setdefault((ev.array, ev.direction), [])
        if ev.site not in seen:
            seen.append(ev.site)

    def _note_storers(self, name: str, words: np.ndarray, groups: np.ndarray) -> None:
        """Note (word, work-group) of these stores where the word is stored by another
        work-group too, before or in this event; and the earlier storers (the smallest and
        largest work-group so far: every earlier one was noted when the second came)."""
        total = self.schedule.work_groups
        found = []
        lo, hi, seen = self.kernel[name].get("store")
        if seen.any():
            before = seen[words]
            lo_g, hi_g = lo[words] // self.items, hi[words] // self.items
            other = before & ((lo_g != groups) | (hi_g != groups))
            if other.any():
                w = words[other].astype(np.int64)
                found += [w * total + groups[other], w * total + lo_g[other],
                          w * total + hi_g[other]]
        order = np.argsort(words, kind="stable")
        w_sorted, g_sorted = words[order], groups[order]
        starts = np.flatnonzero(np.r_[True, w_sorted[1:] != w_sorted[:-1]])
        mixed = np.minimum.reduceat(g_sorted, starts) != np.maximum.reduceat(g_sorted, starts)
        if mixed.any():
            lengths = np.diff(np.r_[starts, len(w_sorted)])
            pick = np.repeat(mixed, lengths)
            found.append(w_sorted[pick].astype(np.int64) * total + g_sorted[pick])
        if found:
            self.storers[name].append(np.unique(np.concatenate(found)))

    def storing_groups(self, name: str, racing: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(linear work-group ids, racing words each stores) over the ``racing`` words."""
        if not self.storers[name]:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        pairs = np.unique(np.concatenate(self.storers[name]))
        total = self.schedule.work_groups
        pairs = pairs[racing[pairs // total]]
        return np.unique(pairs % total, return_counts=True)

    def on_global_fence(self, group_index, arrived) -> None:
        passed = np.asarray(group_index, dtype=np.int64)[np.asarray(arrived) > 0]
        self._close_intervals(passed)

    def on_finish(self) -> None:
        self._close_intervals(None)
        for name in sorted(self.tracked):
            self._between_groups(name)

    # ------------------------------------------------------------------ evaluation
    def _close_intervals(self, groups: np.ndarray | None) -> None:
        """Report races within a work-group since its last global fence, for ``groups``
        (linear ids; ``None``: all), and start their next interval."""
        for name in sorted(self.tracked):
            ext = self.interval[name]
            s_lo, s_hi, s_set = ext.get("store")
            l_lo, l_hi, l_set = ext.get("load")
            touched = s_set | l_set
            if not touched.any():
                continue
            first = np.where(s_set, s_lo, np.iinfo(self.dtype).max)
            first = np.minimum(first, np.where(l_set, l_lo, np.iinfo(self.dtype).max))
            last = np.maximum(s_hi, l_hi)
            group = first // self.items
            one_group = touched & (group == last // self.items)
            if groups is not None:
                one_group &= np.isin(group, groups)
            write_write = one_group & s_set & (s_lo != s_hi)
            read_write = one_group & s_set & l_set & ~write_write & (
                (l_lo != s_lo) | (l_hi != s_lo))
            for kind, racing in (("write-write", write_write), ("read-write", read_write)):
                if racing.any():
                    self._report(name, kind, "within", racing, s_lo, s_hi, l_lo, l_hi)
            if self.fenced:
                ext.reset(np.nonzero(one_group)[0])

    def _between_groups(self, name: str) -> None:
        ext = self.kernel[name]
        s_lo, s_hi, s_set = ext.get("store")
        l_lo, l_hi, l_set = ext.get("load")
        if not s_set.any():
            return
        store_group = s_lo // self.items
        write_write = s_set & (store_group != s_hi // self.items)
        read_write = s_set & l_set & ~write_write & (
            (l_lo // self.items != store_group) | (l_hi // self.items != store_group))
        for kind, racing in (("write-write", write_write), ("read-write", read_write)):
            if racing.any():
                self._report(name, kind, "between", racing, s_lo, s_hi, l_lo, l_hi)

    def _report(self, name, kind, scope, racing, s_lo, s_hi, l_lo, l_hi) -> None:
        word = int(np.argmax(racing))
        writer = int(s_lo[word])
        if kind == "write-write":
            other, other_did = int(s_hi[word]), "stores to"
        else:
            lo, hi = int(l_lo[word]), int(l_hi[word])
            if scope == "between":
                other = lo if lo // self.items != writer // self.items else hi
            else:
                other = lo if lo != writer else hi
            other_did = "reads"
        wg, wl = divmod(writer, self.items)
        og, ol = divmod(other, self.items)
        gid, other_gid = self.log.group_id(wg), self.log.group_id(og)
        stores, loads = self.sites.get((name, "store"), []), self.sites.get((name, "load"), [])
        statements = ", ".join(stores) + (f" | {', '.join(loads)}"
                                          if kind == "read-write" and loads else "")
        shown = sites_text(stores, "stores") + (f" | {sites_text(loads, 'loads')}"
                                                if kind == "read-write" and loads else "")
        where = "between work-groups" if scope == "between" else "within a work-group"
        order = ("OpenCL orders no global memory between work-groups" if scope == "between"
                 else "no barrier with CLK_GLOBAL_MEM_FENCE between them")
        noun = "racing words (by the work-group storing them)"
        if kind == "write-write" and scope == "between":
            ids, counts = self.storing_groups(name, racing)
            noun = "racing words (each counted for every work-group storing it)"
        else:
            ids, counts = np.unique(s_lo[racing] // self.items, return_counts=True)
        element = element_text(name, word, array_dims(self.schedule, name))
        self.log.add(Hazard(
            kind="data-race", schedule=self.schedule.family, array=name, index=word,
            group_id=gid, local_ids=(wl, ol), epoch=-1, count=int(racing.sum()),
            site=f"global {kind} {where}: {statements}",
            detail=(f"{kind} race on global {name} {where} ({shown}): e.g. "
                    f"work-item {wl} of work-group {gid} stores to {element}, which "
                    f"work-item {ol} of work-group {other_gid} {other_did}; {order}")),
            (ids.astype(np.int64), counts), noun)


SITES_SHOWN = 3
"""Statements a race message names of one direction; the others are counted."""


def sites_text(sites: list[str], noun: str) -> str:
    """``sites`` (statements, in the order they first touched the array) for a message: all
    of them up to :data:`SITES_SHOWN` + 1, else the first :data:`SITES_SHOWN` and how many
    more ``noun`` (``stores``, ``loads``) there are."""
    if len(sites) <= SITES_SHOWN + 1:
        return ", ".join(sites)
    return (", ".join(sites[:SITES_SHOWN])
            + f", ... ({len(sites) - SITES_SHOWN} more {noun})")


def _has_global_fence(stmts) -> bool:
    return any(isinstance(s, S.Barrier) and s.global_fence for s in walk_statements(stmts))
