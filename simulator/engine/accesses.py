"""Loads, stores and barriers of a batch, announced to the observers.

Every load and store of one statement is one :class:`simulator.observers.counters.AccessEvent`
covering the batch's work-items (and, inside a vectorized loop, a block of iterations),
after its indices are bounds-checked per dimension: an out-of-bounds entry is the hazard
``out-of-bounds`` and is skipped. Vector accesses (``float2``/``float4``) are one
instruction per work-item: their event lists every element touched
(``AccessEvent.vector_width`` entries per iteration), and a first element whose flat index
is not a multiple of the width is the hazard ``misaligned-vector-access``. A barrier checks
that in each work-group either every work-item or none arrives (otherwise: barrier
divergence, naming the barrier by its place in the source, ``Barrier.source``, or else by
its position among the schedule's barriers) and starts the next barrier interval.
"""
from __future__ import annotations

import math

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk_statements
from tiletraffic.simulator.engine.batch import BatchState, row_major
from tiletraffic.simulator.observers.counters import (AccessEvent, as_3d, count_per_group,
                                                      gather_words)
from tiletraffic.simulator.observers.hazards import Hazard, array_dims, element_text


def _expand_vector(flat, mask, shape, width: int):
    """Index, mask and shape of a vector access with its ``width`` elements laid out along
    the iteration axis: entry ``i * width + w`` is element ``w`` of iteration ``i``."""
    G, L, I = shape
    f3, m3 = as_3d(flat), as_3d(mask)
    f3 = np.broadcast_to(f3, f3.shape[:2] + (I,))
    index = (f3[..., None] + np.arange(width)).reshape(f3.shape[:2] + (I * width,))
    if m3.shape[2] == 1:   # the same along the iteration axis: broadcast, not repeated
        return index, m3, (G, L, I * width)
    return index, np.repeat(m3, width, axis=2), (G, L, I * width)



class Accesses(BatchState):
    """Global and local memory of :class:`simulator.engine.machine.Machine`.

    Reads, besides :class:`simulator.engine.batch.BatchState`'s: ``buffers`` (global arrays
    by name, flat float32), ``local`` (local arrays by name, ``(G, size)`` float32),
    ``sites`` and ``barriers`` (caches), ``blocked``, ``alive``, the sum-length shadows
    (``depths``, ``dbuf``, ``dlocal``, ``dpriv``, ``seeded``, ``last_index``) and the
    private floats (``privates``, ``private_set``, ``private_full``) a vector load sets.
    """

    def dims_of(self, array) -> tuple[int, ...]:
        if isinstance(array, S.GlobalArray):
            return tuple(self.params[d] for d in array.shape)
        return tuple(d.value for d in array.dims)

    def site(self, direction: str, array, index: tuple, source: str | None = None) -> str:
        """``"store x_local[lid]"``: the statement's identity in hazards (cached); with the
        access's ``source`` (a kernel from OpenCL C: its source names and place), ``"store
        tile[ly + r, lx] at k.cl:9:9"``."""
        key = (direction, id(array), id(index), source)
        text = self.sites.get(key)
        if text is None:
            text = self.sites[key] = f"{direction} {source or S.describe_access(array, index)}"
        return text

    def access(self, space: str, direction: str, array, index: tuple, mask, width: int = 1,
               aligned: bool = True, source: str | None = None):
        """Bounds-check (per dimension) and announce one access.

        ``width`` > 1: a vector access of ``width`` consecutive elements along the last
        dimension (all of them bounds-checked); with ``aligned`` its first flat index must be
        a multiple of ``width`` (else a ``misaligned-vector-access`` hazard, the entry
        skipped); without (``vload4``), any element is a right start, and in global memory
        the access is announced as ``width`` scalar accesses, one per component, as the
        compiler emits it. Otherwise the event
        then covers every element: its iteration axis holds ``width`` entries per
        iteration (``AccessEvent.vector_width``).

        ``source``: the access node's (:class:`simulator.ir.nodes.Load`), which names it in
        hazards.

        Returns the row-major flat index (of the first element) and the mask with
        out-of-bounds and misaligned entries off.
        """
        site = self.site(direction, array, index, source)
        dims = self.dims_of(array)
        comps = [np.asarray(self.eval_int(i), dtype=np.int64) for i in index]
        last = len(dims) - 1
        refused = None   # entries skipped as hazards, for on_hazardous_store
        for d, (comp, extent) in enumerate(zip(comps, dims)):
            top = comp + (width - 1) if d == last and width > 1 else comp
            if comp.size and (comp.min() < 0 or top.max() >= extent):
                bad = np.logical_and(mask, (comp < 0) | (top >= extent))
                if bad.any():
                    self.report_out_of_bounds(space, direction, array.name, dims, d,
                                              comps[:d] + [top] + comps[d + 1:], bad, site)
                    mask = np.logical_and(mask, np.logical_not(bad))
                    refused = bad if refused is None else refused | bad
        flat = row_major(comps, dims)
        size = math.prod(dims)
        if width > 1 and aligned:
            misaligned = np.logical_and(mask, flat % width != 0)
            if misaligned.any():
                self.report_misaligned(space, direction, array.name, width, flat, misaligned,
                                       site)
                mask = np.logical_and(mask, np.logical_not(misaligned))
                refused = misaligned if refused is None else refused | misaligned
        if refused is not None and space == "global" and direction == "store":
            shape = self.shape_of(flat, refused)
            words = np.broadcast_to(flat, shape)[np.broadcast_to(refused, shape)]
            words = (words[:, None] + np.arange(width)).reshape(-1)
            words = words[(words >= 0) & (words < size)]
            for obs in self.observers:
                obs.on_hazardous_store(array.name, words)
        if not self.observers:    # nobody to tell (a sum-length run): indices and mask only
            return flat, mask
        shape = self.shape_of(flat, mask)
        if width > 1 and not aligned and space == "global":
            # vloadn/vstoren of global memory: one scalar access per component, as NVIDIA's
            # OpenCL compiler emits them (ld.global.f32 x 4 where it cannot prove 16-byte
            # alignment)
            for w in range(width):
                self.announce(AccessEvent(space, direction, array.name, size, flat + w, mask,
                                          shape, self.group_index, f"{site}.{'xyzw'[w]}",
                                          merge_iterations=not self.blocked, component=w,
                                          element_bytes=S.element_bytes(array)))
            return flat, mask
        ev_index, ev_mask, ev_shape = flat, mask, shape
        if width > 1:
            ev_index, ev_mask, ev_shape = _expand_vector(flat, mask, shape, width)
        self.announce(AccessEvent(space, direction, array.name, size, ev_index, ev_mask,
                                  ev_shape, self.group_index, site, vector_width=width,
                                  merge_iterations=not self.blocked,
                                  element_bytes=S.element_bytes(array)))
        return flat, mask

    def announce(self, event: AccessEvent) -> None:
        """Give ``event`` to every observer (``on_access``)."""
        for obs in self.observers:
            obs.on_access(event)

    def report_misaligned(self, space, direction, name, width, flat, bad, site):
        shape = self.shape_of(bad, flat)
        g, li, it = (int(v[0]) for v in np.nonzero(np.broadcast_to(bad, shape)))
        where = int(np.broadcast_to(flat, shape)[g, li, it])
        groups = self.per_group(bad, shape)
        gid = self.group_id_tuple(g)
        element = element_text(name, where, array_dims(self.schedule, name))
        self.log.add(Hazard(
            kind="misaligned-vector-access", schedule=self.schedule.family, array=name,
            index=where, group_id=gid, local_ids=(li,), epoch=self.epoch,
            count=int(groups[1].sum()), site=f"{space} {site}",
            detail=(f"{space} float{width} {direction} of {name} at {element} (byte "
                    f"offset {where * S.FLOAT_BYTES}, not a multiple of "
                    f"{width * S.FLOAT_BYTES}) ({site}), e.g. by work-item {li} of work-group "
                    f"{gid}")), groups, "misaligned vector accesses")

    def report_out_of_bounds(self, space, direction, name, dims, dim, comps, bad, site):
        shape = self.shape_of(bad, *comps)
        bad_b = np.broadcast_to(bad, shape)
        g, li, it = (int(v[0]) for v in np.nonzero(bad_b))
        where = tuple(int(np.broadcast_to(c, shape)[g, li, it]) for c in comps)
        flat = 0
        for w, extent in zip(where, dims):
            flat = flat * extent + w
        groups = self.per_group(bad, shape)
        gid = self.group_id_tuple(g)
        self.log.add(Hazard(
            kind="out-of-bounds", schedule=self.schedule.family, array=name, index=flat,
            group_id=gid, local_ids=(li,), epoch=self.epoch, count=int(groups[1].sum()),
            site=f"{space} {site}",
            detail=(f"{space} {direction} of {name}[{', '.join(map(str, where))}] "
                    f"({site}): index {where[dim]} outside dimension {dim} of extent "
                    f"{dims[dim]} (shape {' x '.join(map(str, dims))}), e.g. by work-item "
                    f"{li} of work-group {gid}")), groups, "out-of-bounds accesses")

    def load(self, e: S.Load, mask):
        space = "global" if isinstance(e.array, S.GlobalArray) else "local"
        index, mask = self.access(space, "load", e.array, e.index, mask, source=e.source)
        if not self.values:
            return None
        if self.depths:
            self.last_index[id(e)] = (space, index, mask)
        return self.read_values(space, e.array, index, mask)

    def read_values(self, space, array, index, mask, tables=None):
        """Values at flat ``index`` (0 where ``mask`` is off), shape of ``index``; from
        ``tables`` (the sum-length shadows) instead of the values when given."""
        safe = np.where(mask, index, 0) if not np.all(mask) else index
        if space == "global":
            return (tables or self.buffers)[array.name][safe]
        return gather_words((tables or self.local)[array.name], safe)

    def read_vector(self, space, array, index, mask, width: int) -> list[np.ndarray]:
        """The ``width`` values at flat ``index + w`` per entry (element 0 for every ``w``
        where ``mask`` is off: an out-of-bounds or misaligned entry reads what
        :meth:`read_values` gives it), one contiguous array of ``index``'s shape per ``w``,
        by one gather of the consecutive elements."""
        spread = as_3d(index)[..., None] + np.arange(width)
        if not np.all(mask):
            spread = np.where(as_3d(mask)[..., None], spread, 0)
        if spread.shape[0] > 1 and (spread == spread[:1]).all():
            spread = spread[:1]    # the same words in every work-group
        values = self.buffers[array.name][spread] if space == "global" else \
            gather_words(self.local[array.name], spread)
        return [np.ascontiguousarray(values[..., w]) for w in range(width)]

    def exec_store(self, s: S.Store, m) -> None:
        value, ops = self.eval_float(s.value, m)
        self.count_flop(m, ops)
        space = "global" if isinstance(s.array, S.GlobalArray) else "local"
        index, m = self.access(space, "store", s.array, s.index, m, source=s.source)
        if not self.values:
            return
        self.write_values(space, s.array, index, m, value)
        if self.depths:
            self.write_values(space, s.array, index, m, self.depth_of(s.value),
                              self.dbuf if space == "global" else self.dlocal)

    def write_values(self, space, array, index, m, value, tables=None) -> None:
        """Store ``value`` at flat ``index`` where ``m`` is on (into ``tables``, the
        sum-length shadows, when given)."""
        shape = self.shape_of(index, m)
        idx_b = np.broadcast_to(index, shape)
        m_b = np.broadcast_to(m, shape)
        dtype = np.float32 if tables is None else self.shadow.DTYPE
        value = np.asarray(value, dtype=dtype)
        if getattr(array, "dtype", "float") == "half":     # vstore_half: to nearest
            if tables is None:
                value = value.astype(np.float16).astype(np.float32)
            elif hasattr(self.shadow, "stored_half"):
                value = self.shadow.stored_half(value)
        val_b = np.broadcast_to(value, shape)
        if space == "global":
            (tables or self.buffers)[array.name][idx_b[m_b]] = val_b[m_b]
        else:
            g_b = np.broadcast_to(np.arange(self.G).reshape(self.G, 1, 1), shape)
            (tables or self.local)[array.name][g_b[m_b], idx_b[m_b]] = val_b[m_b]

    def exec_vector_load(self, s: S.VectorLoad, m) -> None:
        space = "global" if isinstance(s.array, S.GlobalArray) else "local"
        index, ok = self.access(space, "load", s.array, s.index, m, width=s.width,
                                aligned=s.aligned, source=s.source)
        if self.values:   # entries off read element 0 onwards: one gather of every element
            components = self.read_vector(space, s.array, index, ok, s.width)
        for w, name in enumerate(s.names):
            if name not in self.private_set:
                raise NameError(f"{self.schedule.family}: private {name!r} used before it is "
                                "declared")
            scoped = self.takes_value_everywhere(name, m)
            self.mark_private_set(name, m)
            if self.values:
                value = components[w]
                self.privates[name] = np.broadcast_to(value, np.broadcast_shapes(
                    np.shape(value), np.shape(m))) if scoped else np.where(
                    m, value, self.privates[name]).astype(np.float32, copy=False)
            if self.depths:
                length = 0 if space == "global" and s.array.role == "in" and \
                    s.array.name not in self.seeded else \
                    self.read_values(space, s.array, index + w, ok,
                                     self.dbuf if space == "global" else self.dlocal)
                self.dpriv[name] = np.where(m, length, self.dpriv[name]).astype(
                    self.shadow.DTYPE)

    def exec_vector_store(self, s: S.VectorStore, m) -> None:
        values, ops = [], 0
        for v in s.values:
            value, flop = self.eval_float(v, m)
            values.append(value)
            ops += flop
        self.count_flop(m, ops)
        space = "global" if isinstance(s.array, S.GlobalArray) else "local"
        index, m = self.access(space, "store", s.array, s.index, m, width=s.width,
                               aligned=s.aligned, source=s.source)
        if not self.values:
            return
        for w, value in enumerate(values):
            self.write_values(space, s.array, index + w, m, value)
            if self.depths:
                self.write_values(space, s.array, index + w, m, self.depth_of(s.values[w]),
                                  self.dbuf if space == "global" else self.dlocal)

    def exec_barrier(self, barrier: S.Barrier, m) -> None:
        arrived = count_per_group(m, (self.G, self.L, 1))
        diverged = np.nonzero((arrived > 0) & (arrived < self.L))[0]
        if len(diverged):
            g = int(diverged[0])
            if barrier.source:
                site = f"barrier at {barrier.source}"
                named = f"the {site}"
            else:
                ordinal = self.barrier_ordinal(barrier)
                site, named = f"barrier {ordinal}", f"barrier {ordinal} (in source order)"
            self.log.add(Hazard(
                kind="barrier-divergence", schedule=self.schedule.family, array="", index=-1,
                group_id=self.group_id_tuple(g),
                local_ids=tuple(int(i) for i in np.nonzero(~np.broadcast_to(
                    m[min(g, m.shape[0] - 1)], (self.L, 1))[:, 0])[0][:8]),
                epoch=self.epoch, count=int(arrived[diverged].sum()),
                site=site,
                detail=(f"{named} is reached by some work-items "
                        f"of a work-group and not by others: e.g. only {int(arrived[g])} of "
                        f"{self.L} work-items of work-group {self.group_id_tuple(g)} reach it "
                        f"in barrier interval {self.epoch}")),
                (self.group_index[diverged], arrived[diverged]), "arriving work-items")
        for obs in self.observers:
            obs.on_barrier(self.group_index, arrived)
        if barrier.global_fence:
            for obs in self.observers:
                obs.on_global_fence(self.group_index, arrived)
        self.epoch += 1

    def barrier_ordinal(self, barrier: S.Barrier) -> int:
        """1-based position of ``barrier`` among the schedule's barriers, in the order of
        the schedule's statements (the name of a barrier without ``source``)."""
        if not self.barriers:
            for s in walk_statements(self.schedule.body):
                if isinstance(s, S.Barrier):
                    self.barriers[id(s)] = len(self.barriers) + 1
        return self.barriers[id(barrier)]
