"""The state of one batch of work-groups and the helpers every part of the engine uses on it.

:class:`simulator.engine.machine.Machine` executes a *batch* of G work-groups of L work-items
at once; every per-work-item quantity is a numpy array broadcastable to ``(G, L, I)`` (I
iterations of a vectorized loop block, 1 elsewhere). The machine is put together from parts
by concern, each a class of methods on this state: :class:`BatchState` (here: shapes,
work-group ids, FLOP charges), :class:`simulator.engine.expressions.Expressions` (integer,
condition and float evaluation), :class:`simulator.engine.accesses.Accesses` (loads, stores,
barriers and their observer events), :class:`simulator.engine.private_memory.PrivateMemory`
(private floats and private arrays) and :class:`simulator.engine.control.ControlFlow`
(integers assigned again, ``While`` loops, ``break`` and ``continue``); a part calls the
others' methods through ``self``.
"""
from __future__ import annotations

import numpy as np

from tiletraffic.simulator.observers.counters import count_per_group
from tiletraffic.simulator.observers.hazards import Hazard


def row_major(comps, dims):
    """Row-major flat index of the per-dimension indices ``comps`` (arrays that broadcast
    together) in an array of extents ``dims`` (same rank)."""
    flat = comps[0]
    for comp, extent in zip(comps[1:], dims[1:]):
        flat = flat * extent + comp
    return flat


class BatchState:
    """Shapes and work-group ids of the batch executing now.

    The attributes the parts read (set by :class:`simulator.engine.machine.Machine`):
    ``schedule``, ``params`` (parameter values by name), ``observers``, ``log`` (the
    :class:`simulator.observers.hazards.HazardLog`), ``values`` (values computed), ``G`` and
    ``L`` (work-groups of the batch, work-items per work-group), ``group_index`` (linear ids
    of the batch's work-groups, shape ``(G,)``), ``ids`` (``(kind, dim)`` to the work-item
    ids, ``kind`` one of ``"group"``, ``"local"``, ``"global"``, broadcastable to
    ``(G, L, 1)``), ``epoch`` (the barrier interval now) and ``flop_entries`` (``None`` or the
    last mask :meth:`count_flop` counted, its shape and its true entries per work-group).
    """

    def shape_of(self, *arrays) -> tuple[int, int, int]:
        """``(G, L, I)``: the batch's shape with the iteration axis of ``arrays``."""
        shape = np.broadcast_shapes(*(np.shape(a) for a in arrays), (self.G, self.L, 1))
        return (self.G, self.L, shape[2])

    def per_group(self, mask, shape) -> tuple[np.ndarray, np.ndarray]:
        """(linear ids, true entries) of the batch's work-groups with any true entry."""
        per = count_per_group(mask, shape)
        nonzero = np.nonzero(per)[0]
        return self.group_index[nonzero], per[nonzero]

    def group_id_tuple(self, g: int) -> tuple[int, ...]:
        """Work-group id per NDRange dimension of the batch's work-group ``g``."""
        return tuple(int(self.ids[("group", d)][g, 0, 0])
                     for d in range(len(self.schedule.local_size)))

    def first_work_item(self, bad, value):
        """The first true entry of ``bad`` (a mask broadcastable to the batch's ``(G, L,
        I)``) as ``(g, li, shape, value there, global id, local id, work-group id)``, for
        the example of a message."""
        shape = self.shape_of(bad, value)
        g, li, it = (int(v[0]) for v in np.nonzero(np.broadcast_to(bad, shape)))
        dims = range(len(self.schedule.local_size))
        gid = tuple(int(self.ids[("global", d)][g, li, 0]) for d in dims)
        lid = tuple(int(self.ids[("local", d)][0, li, 0]) for d in dims)
        return (g, li, shape, int(np.broadcast_to(value, shape)[g, li, it]), gid, lid,
                self.group_id_tuple(g))

    def count_flop(self, mask, ops: int) -> None:
        """Charge ``ops`` FLOPs to every true entry of ``mask`` (observers' ``on_flop``)."""
        if ops and self.observers:
            shape = self.shape_of(mask)
            last = self.flop_entries
            if last is not None and last[0] is mask and last[1] == shape:
                entries = last[2]   # masks are never changed in place
            else:
                entries = count_per_group(mask, shape)
                self.flop_entries = (mask, shape, entries)
            per_group = entries * ops
            for obs in self.observers:
                obs.on_flop(self.group_index, per_group)

    def report_uninitialized_read(self, name: str, unset, what: str, consequence: str) -> None:
        """Log the hazard ``uninitialized-private-read`` of the private ``name`` read by the
        work-items of ``unset`` (a mask broadcastable to the batch's ``(G, L, I)``, some
        entry true), the first of them as the example: "work-item 3 of work-group (0, 1)
        reads {what} {name}, which it never assigned ({consequence})"."""
        shape = self.shape_of(unset)
        g, li, _ = (int(v[0]) for v in np.nonzero(np.broadcast_to(unset, shape)))
        gid = self.group_id_tuple(g)
        groups = self.per_group(unset, shape)
        self.log.add(Hazard(
            kind="uninitialized-private-read", schedule=self.schedule.family, array=name,
            index=-1, group_id=gid, local_ids=(li,), epoch=self.epoch,
            count=int(groups[1].sum()), site=f"private {name}",
            detail=(f"work-item {li} of work-group {gid} reads {what} {name}, which it never "
                    f"assigned ({consequence})")), groups, "reads")
