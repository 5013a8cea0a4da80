"""Hazard detectors that observe the access stream: local-memory races, reads of local
memory nothing wrote, reads of output elements before anything wrote them, and output
elements nothing wrote.

Lock-step execution hides races (the result may come out right), so races are found from
*who* touched each local word in the current barrier interval, never from the values:
within one interval (epoch) of one work-group, two different work-items touching the same
local word, at least one of them writing, is a race (read-after-write, write-after-read or
write-after-write), in whatever order the hardware would run them.

Cost: accesses of one epoch are kept until the next barrier and compared only when a store
meets another access of the same array in the same epoch, so correct schedules (which always
separate stores and loads of local memory by a barrier) pay almost nothing.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from tiletraffic.simulator.observers.counters import (AccessEvent, Observer, as_3d,
                                                      compact_mask, gather_words,
                                                      same_in_every_group)
from tiletraffic.simulator.observers.hazards import Hazard, HazardLog, array_dims, element_text


def _entries(ev: AccessEvent, union: bool = False):
    """Flat (group-in-batch, local id, word) of every executing entry of an event.

    With ``union``, work-groups are merged: an entry executes if it does in any work-group
    (valid only when the index does not depend on the work-group). No conflict in the union
    means no conflict in any work-group, so the exact, per-group check is needed only when
    the union shows one.
    """
    shape = ev.shape
    if union:   # any along the work-groups of the mask as given, then broadcast
        raw = as_3d(ev.mask)
        raw = raw.any(axis=0, keepdims=True) if raw.shape[0] > 1 else raw
        shape = (1,) + tuple(shape[1:])
        mask = np.broadcast_to(raw, shape)
        index = np.broadcast_to(as_3d(ev.index)[:1], shape)
    else:
        mask = np.broadcast_to(ev.mask, shape)
        index = np.broadcast_to(ev.index, shape)
    g, li, it = np.nonzero(mask)
    return g, li, index[g, li, it]


def _per_group(group_index: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(linear work-group ids, entries) from the batch positions ``g`` of some entries."""
    counts = np.bincount(g, minlength=len(group_index))
    nonzero = np.nonzero(counts)[0]
    return group_index[nonzero], counts[nonzero]


def group_compact(ev: AccessEvent) -> AccessEvent:
    """``ev`` with its index cut to one work-group where every work-group of the batch has
    the same index (an integer a work-item assigned, materialised for the whole batch, but
    equal in every work-group): the same words once broadcast, so the checks below take
    their one-table path (:func:`_group_free`) for it."""
    index = ev.index
    if isinstance(index, np.ndarray) and index.ndim == 3 and index.shape[0] > 1 and \
            (index == index[:1]).all():
        return dataclasses.replace(ev, index=index[:1])
    return ev


def _group_free(*events: AccessEvent) -> bool:
    """True when no event's index depends on the work-group."""
    return all(same_in_every_group(e.index) for e in events)


class _Owners:
    """Per (work-group, word): the one work-item that touched it, or -2 for several."""

    def __init__(self, g, li, words, size: int, groups: int):
        key = g.astype(np.int64) * size + words
        lo = np.full(groups * size, np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.full(groups * size, -1, dtype=np.int64)
        np.minimum.at(lo, key, li)
        np.maximum.at(hi, key, li)
        self.owner = np.where(hi < 0, -1, np.where(lo == hi, lo, -2))

    def conflicts(self, g, li, words, size: int):
        """Entries whose word another work-item touched: (entry mask, other id or -2)."""
        other = self.owner[g.astype(np.int64) * size + words]
        return (other == -2) | ((other >= 0) & (other != li)), other


class _UnionOwners:
    """Owners (:class:`_Owners`) of the union of a growing list of events of one array,
    per work-group of the batch, built lazily: a word touched by another work-item in the
    union is touched by another work-item in one of the events, and conversely, so a new
    access conflicts with none of the events exactly when it conflicts with the union.

    While every event added has the same index and mask in every work-group of the batch
    (the usual local access: an index of local ids and loop variables), the per-work-group
    tables are all equal and one table of ``size`` words stands for them (``shared``); the
    first event that differs between work-groups copies it to every work-group."""

    def __init__(self, size: int, groups: int):
        self.size, self.groups = size, groups
        self.shared = True
        self.lo = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)
        self.hi = np.full(size, -1, dtype=np.int64)
        self.events = 0
        """How many events of the list are in the union."""
        self.touched: np.ndarray | None = None
        """Per word, whether the union touches it in any work-group (None: not known)."""

    def add(self, ev: AccessEvent) -> None:
        if self.shared and not _same_everywhere(ev):
            self.lo, self.hi = np.tile(self.lo, self.groups), np.tile(self.hi, self.groups)
            self.shared = False
        g, li, words = _entries(ev, union=self.shared)
        key = words if self.shared else g.astype(np.int64) * self.size + words
        np.minimum.at(self.lo, key, li)
        np.maximum.at(self.hi, key, li)
        self.touched = None

    def conflicts(self, ev: AccessEvent) -> bool:
        index, mask = np.asarray(ev.index), compact_mask(np.asarray(ev.mask))
        everywhere = _group_free(ev) and same_in_every_group(mask)
        if everywhere:
            # words no work-group of the union touches cannot conflict in any work-group
            one = (1,) + tuple(ev.shape[1:])
            words = np.broadcast_to(index, one)[np.broadcast_to(mask, one)]
            if self.touched is None:
                self.touched = (self.hi.reshape(-1, self.size) >= 0).any(axis=0)
            if not self.touched[words].any():
                return False
        g, li, words = _entries(ev, union=self.shared and everywhere)
        key = words if self.shared else g.astype(np.int64) * self.size + words
        lo, hi = self.lo[key], self.hi[key]
        return bool((((lo != hi) & (hi >= 0)) | ((hi >= 0) & (lo == hi) & (lo != li))).any())


def _same_everywhere(ev: AccessEvent) -> bool:
    """Whether ``ev``'s index and mask are the same in every work-group of its batch."""
    return _group_free(ev) and same_in_every_group(compact_mask(np.asarray(ev.mask)))


def event_key(ev: AccessEvent) -> tuple:
    """What a detector's verdict on ``ev`` depends on, exactly: its array, direction, shape
    and the values of its index and mask (two events of equal keys touch the same words by
    the same work-items of the same work-groups of a batch)."""
    index, mask = np.asarray(ev.index), np.asarray(ev.mask)
    return (ev.array, ev.direction, tuple(ev.shape), index.shape, index.dtype.str,
            index.tobytes(), mask.shape, mask.tobytes())


UNION_MAX_WORDS = 1 << 22
"""Largest (work-groups of the batch) x (words of a local array) kept as a union table."""


class LocalRaceDetector(Observer):
    """Finds data races on local memory within one barrier interval of a work-group.

    A new access is compared with each earlier access of the interval only when it
    conflicts with their union (:class:`_UnionOwners`; the same verdict, far fewer
    comparisons when an interval holds many accesses, as a prefetching GEMM's does).

    Args:
        schedule: the schedule (for messages).
        log: where hazards go.
        group_id_of: maps a linear work-group id to its id per dimension.
        local_sizes: elements of each local array.
    """

    def __init__(self, schedule, log: HazardLog, group_id_of, local_sizes: dict[str, int]):
        self.schedule, self.log, self.group_id_of = schedule, log, group_id_of
        self.local_sizes = local_sizes
        self.epoch_events: dict[str, list[AccessEvent]] = {}
        self.unions: dict[tuple[str, str], _UnionOwners] | None = {}
        self._reset_intervals()

    def _reset_intervals(self) -> None:
        """Forget the barrier intervals seen (a new batch)."""
        self.prefixes: dict[tuple, int] = {}
        """Each sequence of events of one array in one barrier interval seen in this batch
        (as the sequence before its last event and that event's :func:`event_key`), by
        number."""
        self.clean: set[int] = set()
        """The sequences whose last event was checked against the others and found no race:
        the same sequence again (a loop's next iteration) has none either."""
        self.current: dict[str, int] = {}
        """Per array, the number of the current interval's sequence (0: none yet)."""
        self.remembering = True
        """False after a barrier some work-groups did not pass (then their events stay)."""

    def on_batch(self, group_index, work_items, weights=None) -> None:
        self.group_index = group_index
        self.epoch_events = {}
        self.unions = {}
        self.epochs = np.zeros(len(group_index), dtype=np.int64)
        self._reset_intervals()

    def on_barrier(self, group_index, arrived) -> None:
        """Work-groups that passed the barrier start a new interval; the accesses of the
        others (none of whose work-items arrived) stay in their current interval."""
        passed = np.asarray(arrived) > 0
        self.epochs += passed
        self.current = {}
        if passed.all():
            self.epoch_events = {}
            self.unions = {}
            return
        self.remembering = False
        self.unions = None   # masks change below: compare event by event until a full barrier
        keep = ~passed.reshape(-1, 1, 1)
        self.epoch_events = {
            name: [dataclasses.replace(ev, mask=np.logical_and(ev.mask, keep)) for ev in evs]
            for name, evs in self.epoch_events.items()}

    def _may_conflict(self, ev: AccessEvent, earlier: list[AccessEvent], stores: bool) -> bool:
        """Whether ``ev`` conflicts with the union of the ``earlier`` events (their stores
        only, with ``stores``); ``True`` when no union is kept."""
        size = self.local_sizes[ev.array]
        if self.unions is None or ev.shape[0] * size > UNION_MAX_WORDS:
            return True
        union = self.unions.get((ev.array, stores))
        if union is None:
            union = self.unions[(ev.array, stores)] = _UnionOwners(size, ev.shape[0])
        for old in earlier[union.events:]:
            if not stores or old.direction == "store":
                union.add(old)
        union.events = len(earlier)
        return union.conflicts(ev)

    def on_access(self, ev: AccessEvent) -> None:
        if ev.space != "local" or not np.any(ev.mask):
            return
        ev = group_compact(ev)
        earlier = self.epoch_events.setdefault(ev.array, [])
        sequence = None
        if self.remembering:
            key = (self.current.get(ev.array, 0), event_key(ev))
            sequence = self.prefixes.setdefault(key, len(self.prefixes) + 1)
            self.current[ev.array] = sequence
            if sequence in self.clean:
                earlier.append(ev)
                return
        reported = self.log.reports
        self._check(ev, earlier)
        if sequence is not None and self.log.reports == reported:
            self.clean.add(sequence)
        earlier.append(ev)

    def _check(self, ev: AccessEvent, earlier: list[AccessEvent]) -> None:
        """Compare ``ev`` with the ``earlier`` events of its array in its interval."""
        if ev.direction == "store":
            self._within_store(ev)
            if earlier and self._may_conflict(ev, earlier, stores=False):
                for old in earlier:
                    self._between(old, ev)
        elif any(old.direction == "store" for old in earlier) and \
                self._may_conflict(ev, earlier, stores=True):
            for old in earlier:
                if old.direction == "store":
                    self._between(old, ev)

    def _within_store(self, ev: AccessEvent) -> None:
        size = self.local_sizes[ev.array]
        for union in ((True, False) if _group_free(ev) else (False,)):
            g, li, words = _entries(ev, union)
            owners = _Owners(g, li, words, size, 1 if union else ev.shape[0])
            bad, other = owners.conflicts(g, li, words, size)
            if not bad.any():
                return
        self._report("write-after-write", ev.array, g, li, words, other, bad, "store", "store",
                     f"{ev.site} | {ev.site}")

    def _between(self, old: AccessEvent, new: AccessEvent) -> None:
        size = self.local_sizes[new.array]
        for union in ((True, False) if _group_free(old, new) else (False,)):
            og, oli, ow = _entries(old, union)
            owners = _Owners(og, oli, ow, size, 1 if union else new.shape[0])
            g, li, words = _entries(new, union)
            bad, other = owners.conflicts(g, li, words, size)
            if not bad.any():
                return
        kind = {("store", "load"): "read-after-write", ("load", "store"): "write-after-read",
                ("store", "store"): "write-after-write"}[(old.direction, new.direction)]
        self._report(kind, new.array, g, li, words, other, bad, old.direction, new.direction,
                     f"{old.site} | {new.site}")

    def _report(self, kind, array, g, li, words, other, bad, old_dir, new_dir, sites) -> None:
        i = int(np.argmax(bad))
        gid = self.group_id_of(int(self.group_index[g[i]]))
        first = int(other[i]) if other[i] >= 0 else None
        me = int(li[i])
        word = "local " + element_text(array, int(words[i]), array_dims(self.schedule, array))
        them = f"work-item {first}" if first is not None else "several other work-items"
        did = {"store": "stored", "load": "read"}[old_dir]
        verb = {"store": "stores to", "load": "reads"}[new_dir]
        groups = _per_group(self.group_index, g[bad])
        self.log.add(Hazard(
            kind="data-race", schedule=self.schedule.family, array=array, index=int(words[i]),
            group_id=gid, local_ids=tuple(v for v in (first, me) if v is not None),
            epoch=int(self.epochs[g[i]]), count=int(bad.sum()), site=f"{kind}: {sites}",
            detail=(f"{kind} race on local memory ({sites}): e.g. in work-group {gid}, "
                    f"barrier interval {int(self.epochs[g[i]])}, work-item {me} {verb} {word}, "
                    f"which {them} {did} with no barrier between")),
            groups, "racing accesses")


class UninitializedLocalRead(Observer):
    """Finds loads of local words that no work-item of the work-group has stored yet."""

    def __init__(self, schedule, log: HazardLog, group_id_of, local_sizes: dict[str, int]):
        self.schedule, self.log, self.group_id_of = schedule, log, group_id_of
        self.local_sizes = local_sizes
        self.epoch = 0

    def on_batch(self, group_index, work_items, weights=None) -> None:
        self.group_index = group_index
        # per local array, the words stored so far: one row for every work-group while
        # every work-group stored the same words, else one row each
        self.written = {n: np.zeros((1, s), dtype=bool) for n, s in self.local_sizes.items()}
        self.complete = {n: False for n in self.local_sizes}
        self.epochs = np.zeros(len(group_index), dtype=np.int64)
        self.done: set[tuple] = set()
        """:func:`event_key` of the stores applied and of the loads found reading stored
        words only, in this batch: the words stored only grow, so the same store again
        stores nothing new and the same load again reads stored words only."""

    def on_barrier(self, group_index, arrived) -> None:
        self.epochs += np.asarray(arrived) > 0

    def on_access(self, ev: AccessEvent) -> None:
        if ev.space != "local" or self.complete.get(ev.array, True):
            return
        ev = group_compact(ev)
        key = event_key(ev)
        if key in self.done:
            return
        reported = self.log.reports
        self._check(ev)
        if self.log.reports == reported:
            self.done.add(key)

    def _check(self, ev: AccessEvent) -> None:
        """Apply a store of ``ev`` or check its load."""
        written = self.written[ev.array]
        shared = written.shape[0] == 1 and len(self.group_index) > 1
        same = shared and _same_everywhere(ev)
        if ev.direction == "store":
            if shared and not same:
                written = self.written[ev.array] = np.repeat(written, len(self.group_index),
                                                             axis=0)
            g, li, words = _entries(ev, union=same)
            written[g, words] = True
            self.complete[ev.array] = bool(written.all())
            if written.shape[0] > 1 and (written == written[:1]).all():
                self.written[ev.array] = written[:1].copy()   # the same words everywhere
            return
        if not shared and _all_stored(written, ev):
            return
        g, li, words = _entries(ev, union=same)
        unset = ~written[0 if shared else g, words]
        if unset.any() and same:   # the hazard's entries and counts per work-group
            g, li, words = _entries(ev)
            unset = ~written[0, words]
        if unset.any():
            i = int(np.argmax(unset))
            gid = self.group_id_of(int(self.group_index[g[i]]))
            word = element_text(ev.array, int(words[i]), array_dims(self.schedule, ev.array))
            self.log.add(Hazard(
                kind="uninitialized-local-read", schedule=self.schedule.family,
                array=ev.array, index=int(words[i]), group_id=gid, local_ids=(int(li[i]),),
                epoch=int(self.epochs[g[i]]), count=int(unset.sum()), site=ev.site,
                detail=(f"{ev.site}: e.g. work-item {int(li[i])} of work-group {gid} reads "
                        f"local {word}, which no work-item of its "
                        "work-group has stored")),
                _per_group(self.group_index, g[unset]), "reads")


def _all_stored(written: np.ndarray, ev: AccessEvent) -> bool:
    """Whether every executing entry of ``ev`` reads a word its work-group has stored
    (``written``: one row of stored words per work-group of the batch), by one gather."""
    index = np.clip(ev.index, 0, written.shape[1] - 1)   # entries off: any word
    stored = gather_words(written, index)
    return bool(np.logical_or(stored, np.logical_not(ev.mask)).all())


class UninitializedOutputRead(Observer):
    """Finds loads of elements of output buffers (role ``out``) that no work-item has stored
    before the load, as ``uninitialized-global-read`` hazards: such a buffer holds no
    defined contents when the kernel starts (the host fills it with
    :data:`simulator.engine.unwritten.UNWRITTEN_BITS`), so the load reads garbage. A buffer the
    kernel reads before writing is ``inout``.

    Work-groups run in linear order and the work-items of a batch in lock-step, so a store
    counts as before a load when an earlier work-group, or an earlier statement of the same
    batch, made it. A load that only sees a value because another work-item's unordered
    store came first is a data race, which :mod:`simulator.observers.global_races` reports; the
    load of an element that a later work-item or work-group stores is reported here, where
    lock-step order would hide nothing. Needs every work-group of the launch, in order."""

    def __init__(self, schedule, log: HazardLog, group_id_of, output_sizes: dict[str, int]):
        self.schedule, self.log, self.group_id_of = schedule, log, group_id_of
        self.written = {n: np.zeros(s, dtype=bool) for n, s in output_sizes.items()}
        self.epochs = np.zeros(0, dtype=np.int64)

    def on_batch(self, group_index, work_items, weights=None) -> None:
        self.group_index = group_index
        self.epochs = np.zeros(len(group_index), dtype=np.int64)

    def on_barrier(self, group_index, arrived) -> None:
        self.epochs += np.asarray(arrived) > 0

    def on_hazardous_store(self, array: str, words: np.ndarray) -> None:
        if array in self.written:   # written on a device, by an access already reported
            self.written[array][words] = True

    def on_access(self, ev: AccessEvent) -> None:
        if ev.space != "global" or ev.array not in self.written:
            return
        g, li, words = _entries(ev)
        written = self.written[ev.array]
        if ev.direction == "store":
            written[words] = True
            return
        unset = ~written[words]
        if unset.any():
            i = int(np.argmax(unset))
            gid = self.group_id_of(int(self.group_index[g[i]]))
            element = element_text(ev.array, int(words[i]),
                                   array_dims(self.schedule, ev.array))
            self.log.add(Hazard(
                kind="uninitialized-global-read", schedule=self.schedule.family,
                array=ev.array, index=int(words[i]), group_id=gid, local_ids=(int(li[i]),),
                epoch=int(self.epochs[g[i]]), count=int(unset.sum()), site=ev.site,
                detail=(f"{ev.site}: e.g. work-item {int(li[i])} of work-group {gid} reads "
                        f"{element} of the output {ev.array}, which nothing has stored yet "
                        f"(an output holds no defined values when the kernel starts; "
                        f"declare {ev.array} inout if the kernel reads its contents)")),
                _per_group(self.group_index, g[unset]), "reads")


class UnwrittenOutput(Observer):
    """Reports output elements that no work-item stored (e.g. a grid too small); elements
    that a store reported as a hazard (out of bounds in a dimension but inside the buffer,
    misaligned) would write are counted as written, not reported twice."""

    def __init__(self, schedule, log: HazardLog, output_sizes: dict[str, int],
                 output_shapes: dict[str, tuple[int, ...]]):
        self.schedule, self.log = schedule, log
        self.shapes = output_shapes
        self.written = {n: np.zeros(s, dtype=bool) for n, s in output_sizes.items()}

    def on_access(self, ev: AccessEvent) -> None:
        if ev.space == "global" and ev.direction == "store" and ev.array in self.written:
            idx, mask = np.broadcast_arrays(ev.index, ev.mask)
            self.written[ev.array][idx[mask]] = True

    def on_hazardous_store(self, array: str, words: np.ndarray) -> None:
        # written on a device, by an access already reported: not also "never written"
        if array in self.written:
            self.written[array][words] = True

    def on_finish(self) -> None:
        for name, written in self.written.items():
            missing = int((~written).sum())
            if missing:
                first = np.unravel_index(int(np.argmin(written)), self.shapes[name])
                self.log.add(Hazard(
                    kind="unwritten-output", schedule=self.schedule.family, array=name,
                    index=int(np.argmin(written)), group_id=(), local_ids=(), epoch=-1,
                    count=missing, site=name,
                    detail=(f"{missing} of {written.size} elements of {name} are never "
                            f"written (first: {name}[{', '.join(map(str, first))}])")))
