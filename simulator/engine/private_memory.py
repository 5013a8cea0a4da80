"""Private memory of a batch: private floats and private arrays (register tiles).

A private float is kept per work-item as a ``(G, L, 1)`` float32 array, a private array as
``(G, L, size)``; beside each, which work-items have set it (a read of an unset one is the
hazard ``uninitialized-private-read``). Indices of private arrays are bounds-checked like
any array's (``out-of-bounds``). With values off and the private nests accelerator
(``static_private_elements``), an element of one static index is read and assigned without
per-work-item index arrays; inside a loop run in blocks
(:mod:`simulator.engine.accelerators.loop_blocks`) an element is set where any iteration of
the block assigns it.
"""
from __future__ import annotations

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine.accelerators import loop_blocks
from tiletraffic.simulator.engine.batch import BatchState, row_major
from tiletraffic.simulator.observers.hazards import Hazard, element_text


class PrivateMemory(BatchState):
    """Private floats and arrays of :class:`simulator.engine.machine.Machine`.

    Reads and writes, besides :class:`simulator.engine.batch.BatchState`'s: ``privates``
    (name to float32 ``(G, L, 1)``), ``private_set`` and ``private_full`` (which work-items
    set each, and whether all did), ``private_scope`` (the mask each one's declaration ran
    under), ``shuffles`` (whether the schedule has a ``Shuffle``, which reads other
    work-items' privates), ``parrays`` (name to ``(PrivateArray, float32 (G, L,
    size))``), ``parray_set`` (name to the elements set, bool ``(G, L, size)``, ``None``
    for an array declared with an initial value), ``static_private_elements``,
    ``blocked``, and the sum-length shadows ``dpriv``, ``dparr``, ``last_index``.
    """

    def exec_update(self, s, m) -> None:
        """Execute ``Assign`` or ``Accumulate`` ``s`` (a private float, or an element of a
        private array where ``s.index``) for the work-items of ``m``."""
        if s.index:
            self.exec_private_elem_update(s, m)
        else:
            self.exec_private_update(s, m)

    def check_private_set(self, name: str, mask) -> None:
        """Report reads of a private variable by work-items that never assigned it."""
        if self.private_full.get(name):
            return
        if name not in self.private_set:
            raise NameError(f"{self.schedule.family}: private {name!r} used before it is "
                            "declared")
        unset = np.logical_and(mask, np.logical_not(self.private_set[name]))
        if np.any(unset):
            self.report_uninitialized_read(
                name, unset, "private", "its value, and what is computed from it, is undefined")
            self.private_set[name] = np.logical_or(self.private_set[name],
                                                   np.any(unset, axis=2, keepdims=True))

    def mark_private_set(self, name: str, m) -> None:
        """Count the work-items of ``m`` as having set private float ``name``. Where ``m`` is
        the very mask its declaration ran under (no work-item returned or left a loop
        since), every work-item that can read it has set it: it is then set in full."""
        if self.private_full.get(name):
            return
        if m is self.private_scope.get(name):
            self.private_full[name] = True
            return
        self.private_set[name] = np.logical_or(self.private_set[name],
                                               np.any(m, axis=2, keepdims=True))
        self.private_full[name] = bool(self.private_set[name].all())

    def takes_value_everywhere(self, name: str, m) -> bool:
        """Whether an update of private float ``name`` under ``m`` may take the new value for
        every work-item without a masked merge: ``m`` is the very mask its declaration ran
        under (no work-item outside it reads it) and no ``Shuffle`` reads other work-items'
        privates."""
        return m is self.private_scope.get(name) and not self.shuffles

    def exec_private_update(self, s, m) -> None:
        value, ops = self.eval_float(s.value, m)
        accumulate = isinstance(s, S.Accumulate)
        if accumulate:
            self.check_private_set(s.name, m)
        else:
            self.mark_private_set(s.name, m)
        self.count_flop(m, ops + (1 if accumulate else 0))
        if not self.values:
            return
        old = self.privates[s.name]
        if self.depths:
            terms, before = self.depth_of(s.value), self.dpriv[s.name]
            self.dpriv[s.name] = self.shadow.accumulate(before, terms, m) if accumulate else \
                np.where(m, terms, before).astype(self.shadow.DTYPE)
        if accumulate:
            contrib = np.where(m, value, np.float32(0)).sum(axis=2, keepdims=True,
                                                            dtype=np.float32)
            self.privates[s.name] = old + contrib
        elif self.takes_value_everywhere(s.name, m):
            # under its declaration's mask: no work-item outside ``m`` ever reads it
            shape = np.broadcast_shapes(np.shape(m), np.shape(value), np.shape(old))
            self.privates[s.name] = np.broadcast_to(_unaliased(value), shape)
        else:
            self.privates[s.name] = np.where(m, value, old).astype(np.float32, copy=False)


    def exec_shuffle(self, s: S.Shuffle, m) -> None:
        """Execute :class:`~simulator.ir.nodes.Shuffle` ``s`` for the work-items of ``m``:
        each reads ``s.value`` of the lane of its segment that ``s.mode`` picks (lanes in
        the order of the flattened local id), its own where that lane is outside the
        segment or the work-group."""
        value, ops = self.eval_float(s.value, m)
        self.count_flop(m, ops)
        self.mark_private_set(s.name, m)
        if not self.values:
            return
        lane = np.asarray(self.eval_int(s.lane), dtype=np.int64)
        shape = self.shape_of(value, m, lane)
        source = shuffle_sources(s.mode, np.broadcast_to(lane, shape), s.width, self.L)
        picked = np.take_along_axis(np.broadcast_to(np.asarray(value, np.float32), shape),
                                    source, axis=1)
        if self.depths:
            terms = np.broadcast_to(np.asarray(self.depth_of(s.value)), shape)
            self.dpriv[s.name] = np.where(m, np.take_along_axis(terms, source, axis=1),
                                          self.dpriv[s.name]).astype(self.shadow.DTYPE)
        self.privates[s.name] = np.where(m, picked, self.privates[s.name]).astype(np.float32)

    def private_elem_index(self, name: str, index: tuple, mask, direction: str):
        """Flat element index of ``name[index]`` per entry, shape (G, L, I), and the mask
        with out-of-bounds entries off (reported as out-of-bounds hazards)."""
        if name not in self.parrays:
            raise NameError(f"{self.schedule.family}: private array {name!r} used before it "
                            "is declared")
        array, _ = self.parrays[name]
        dims = tuple(d.value for d in array.dims)
        comps = [np.asarray(self.eval_int(i), dtype=np.int64) for i in index]
        site = self.site(direction, array, index)
        for d, (comp, extent) in enumerate(zip(comps, dims)):
            bad = np.logical_and(mask, (comp < 0) | (comp >= extent))
            if np.any(bad):
                self.report_out_of_bounds("private", direction, name, dims, d, comps, bad,
                                          site)
                mask = np.logical_and(mask, np.logical_not(bad))
        flat = row_major(comps, dims)
        shape = self.shape_of(flat, mask)
        mask_b = np.broadcast_to(mask, shape)
        return np.where(mask_b, np.broadcast_to(flat, shape), 0), mask_b

    def private_elem_flat(self, name: str, index: tuple) -> int | None:
        """Flat element index of ``name[index]`` when every index is one integer for all
        work-items and within bounds; ``None`` otherwise (then :meth:`private_elem_index`
        handles it, reporting what it must)."""
        if name not in self.parrays:
            return None
        array = self.parrays[name][0]
        flat = 0
        for i, d in zip(index, array.dims):
            comp = self.eval_int(i)
            if np.ndim(comp) or not 0 <= comp < d.value:
                return None
            flat = flat * d.value + int(comp)
        return flat if len(index) == len(array.dims) else None

    def read_private_elem(self, e: S.PrivateElem, mask):
        if self.depths and self.shape_of(mask)[2] == 1:
            flat = self.private_elem_flat(e.array.name, e.index)
            is_set = self.parray_set.get(e.array.name)
            if flat is not None and (is_set is None or not np.any(np.logical_and(
                    mask, np.logical_not(is_set[:, :, flat:flat + 1])))):
                self.last_index[id(e)] = flat   # one static element: a slice, same values
                return self.parrays[e.array.name][1][:, :, flat:flat + 1]
        if self.static_private_elements:
            flat = self.private_elem_flat(e.array.name, e.index)
            if flat is not None:
                is_set = self.parray_set[e.array.name]
                if is_set is None or not np.any(np.logical_and(
                        mask, np.logical_not(is_set[:, :, flat:flat + 1]))):
                    return None
        idx, ok = self.private_elem_index(e.array.name, e.index, mask, "load")
        is_set = self.parray_set[e.array.name]
        if is_set is not None:
            unset = ok & ~np.take_along_axis(is_set, idx, axis=2)
            if np.any(unset):
                shape = unset.shape
                g, li, _ = (int(v[0]) for v in np.nonzero(unset))
                gid = self.group_id_tuple(g)
                groups = self.per_group(unset, shape)
                self.log.add(Hazard(
                    kind="uninitialized-private-read", schedule=self.schedule.family,
                    array=e.array.name, index=int(idx[g, li, 0]), group_id=gid,
                    local_ids=(li,), epoch=self.epoch, count=int(groups[1].sum()),
                    site=f"private {e.array.name}",
                    detail=(f"work-item {li} of work-group {gid} reads private "
                            + element_text(e.array.name, int(idx[g, li, 0]),
                                           tuple(d.value for d in e.array.dims))
                            + ", which it never assigned")), groups, "reads")
        if not self.values:
            return None
        if self.depths:
            self.last_index[id(e)] = idx
        return np.take_along_axis(self.parrays[e.array.name][1], idx, axis=2)

    def exec_private_elem_update(self, s, m) -> None:
        value, ops = self.eval_float(s.value, m)
        accumulate = isinstance(s, S.Accumulate)
        if accumulate:
            self.read_private_elem(S.PrivateElem(self.parrays[s.name][0], s.index), m)
        if self.depths and self.update_static_elem(s, m, value, ops, accumulate):
            return
        if self.static_private_elements:
            flat = self.private_elem_flat(s.name, s.index)
            if flat is not None:
                iterations = self.shape_of(m)[2]
                if iterations != 1 and not self.blocked:
                    raise ValueError(f"{self.schedule.family}: private array {s.name} written "
                                     "in a vectorized loop")
                self.count_flop(m, ops + (1 if accumulate else 0))
                is_set = self.parray_set[s.name]
                if is_set is not None:   # set where any iteration (of a block) assigns it
                    is_set[:, :, flat] |= np.broadcast_to(
                        m, (self.G, self.L, iterations)).any(axis=2)
                return
        if self.blocked and not self.values and \
                loop_blocks.assign_elements(self, s, m, ops + (1 if accumulate else 0)):
            return
        idx, ok = self.private_elem_index(s.name, s.index, m, "store")
        if idx.shape[2] != 1 and not self.blocked:
            raise ValueError(f"{self.schedule.family}: private array {s.name} written in a "
                             "vectorized loop")
        self.count_flop(m, ops + (1 if accumulate else 0))
        is_set = self.parray_set[s.name]
        if is_set is not None and idx.shape[2] != 1:
            # a block of iterations (simulator.engine.accelerators.loop_blocks): set where
            # any entry assigns it
            for flat in np.unique(idx[ok]):
                is_set[:, :, flat] |= (ok & (idx == flat)).any(axis=2)
        elif is_set is not None:
            np.put_along_axis(is_set, idx, np.take_along_axis(is_set, idx, axis=2) | ok,
                              axis=2)
        if not self.values:
            return
        table = self.parrays[s.name][1]
        old = np.take_along_axis(table, idx, axis=2)
        value = np.broadcast_to(np.asarray(value, dtype=np.float32), old.shape)
        new = (old + np.where(ok, value, np.float32(0))) if accumulate else \
            np.where(ok, value, old)
        np.put_along_axis(table, idx, new.astype(np.float32), axis=2)
        if self.depths:
            shadow = self.dparr[s.name]
            before = np.take_along_axis(shadow, idx, axis=2)
            terms = np.broadcast_to(self.depth_of(s.value), before.shape)
            after = self.shadow.add(before, terms) if accumulate else terms
            np.put_along_axis(shadow, idx, np.where(ok, after, before).astype(
                self.shadow.DTYPE), axis=2)

    def update_static_elem(self, s, m, value, ops: int, accumulate: bool) -> bool:
        """With sum lengths: ``name[index] (+)= value`` where the index is one in-bounds
        element for every work-item, by slices (the same result as the indexed path);
        ``False`` (nothing done) otherwise."""
        flat = self.private_elem_flat(s.name, s.index)
        if flat is None or self.shape_of(m)[2] != 1:
            return False
        self.count_flop(m, ops + (1 if accumulate else 0))
        on = np.broadcast_to(m, (self.G, self.L, 1))
        is_set = self.parray_set[s.name]
        if is_set is not None:
            is_set[:, :, flat] |= on[:, :, 0]
        table, shadow = self.parrays[s.name][1], self.dparr[s.name]
        if on.all():     # every work-item: the element's slices updated in place
            terms = self.depth_of(s.value)
            if accumulate:
                table[:, :, flat:flat + 1] += np.asarray(value, dtype=np.float32)
                shadow[:, :, flat:flat + 1] = self.shadow.add(shadow[:, :, flat:flat + 1],
                                                              terms)
            else:
                table[:, :, flat:flat + 1] = np.asarray(value, dtype=np.float32)
                shadow[:, :, flat:flat + 1] = terms
            return True
        old, before = table[:, :, flat:flat + 1], shadow[:, :, flat:flat + 1].copy()
        value = np.broadcast_to(np.asarray(value, dtype=np.float32), old.shape)
        terms = np.broadcast_to(self.depth_of(s.value), before.shape)
        new = (old + np.where(on, value, np.float32(0))) if accumulate else \
            np.where(on, value, old)
        table[:, :, flat:flat + 1] = new.astype(np.float32)
        after = self.shadow.add(before, terms) if accumulate else terms
        shadow[:, :, flat:flat + 1] = np.where(on, after, before)
        return True



def _unaliased(value) -> np.ndarray:
    """``value`` as float32 that no later in-place update can change: a writable view of
    other memory (a private array's element read as a slice) is copied."""
    value = np.asarray(value, dtype=np.float32)
    if value.flags.writeable and not value.flags.owndata:
        return value.copy()
    return value


def shuffle_sources(mode: str, lane, width: int, items: int):
    """The flattened local id each work-item of a shuffle reads (``lane``: the shuffle's
    lane operand per work-item, shape ``(G, L, I)``; ``items``: work-items per work-group),
    as :class:`~simulator.ir.nodes.Shuffle` defines it."""
    me = np.arange(lane.shape[1], dtype=np.int64).reshape(1, -1, 1)
    base, position = me // width * width, me % width
    if mode == "index":
        target = lane % width
    elif mode == "up":
        target = position - lane
    elif mode == "down":
        target = position + lane
    else:
        target = position ^ lane
    source = base + target
    inside = (target >= 0) & (target < width) & (source < items)
    return np.where(inside, source, me)
