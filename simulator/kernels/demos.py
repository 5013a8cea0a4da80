"""Demonstration kernels of faults in global memory and across launches, with their
correct versions (registered in :mod:`simulator.kernels.variants`).

- An in-place reduction: work-group ``g`` sums its chunk of ``buf`` and stores the sum back
  into ``buf``. Stored at ``buf[g]`` (the classic slip), the sums of work-groups 1, 2, ...
  land in work-group 0's chunk, which work-group 0 reads: a read-write race between
  work-groups, which nothing in OpenCL orders. Stored at the start of its own chunk it is
  correct.
- A neighbour read through global memory: every work-item stores ``y[i]``, passes a barrier
  and reads the ``y`` its neighbour in the work-group stored. ``barrier(CLK_LOCAL_MEM_FENCE)``
  does not order global memory, so this races; with ``CLK_GLOBAL_MEM_FENCE`` it is correct.
- A kernel that is correct in every launch but one: it takes the launch number as the
  argument :data:`LAUNCH_INDEX_PARAM` (``gpu.runtime.launch.run_kernel`` passes it) and stores zeros
  in launch :data:`WRONG_LAUNCH`. One launch, simulated or under Oclgrind, is correct; only a
  check of every timed launch catches it.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import rewrite
from tiletraffic.simulator.ir.nodes import (Accumulate, Barrier, Const, DeclareFloat,
                                            GlobalArray, If, Let, LocalArray, Param, Schedule,
                                            ScheduleError, block, global_id, group_id,
                                            local_id, store)

LAUNCH_INDEX_PARAM = "launch_index"
"""Name of the ``int`` kernel argument that ``gpu.runtime.launch.run_kernel`` sets to the number of
the launch (0 for the first warm-up launch); the simulator and Oclgrind run launch 0."""

WRONG_LAUNCH = 5
"""The launch in which :func:`zeros_in_one_launch` stores zeros (with the default 2 warm-up
launches, the 4th of 10 timed launches)."""


def _items(tile: int | None, default: int) -> int:
    items = default if tile is None else tile
    if isinstance(items, bool) or not isinstance(items, int) or items < 2:
        raise ScheduleError(f"the work-group size must be an integer >= 2, got {items!r}")
    return items


def _elements(m) -> int:
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ScheduleError(f"M (the number of elements) must be a positive integer, got {m!r}")
    return m


def reduction_demo(m: int = 64, k: int | None = None, n: int | None = None,
                   tile: int | None = 8, in_place_at_group: bool = False) -> Schedule:
    """One pass of an in-place sum of ``buf`` (M elements, role ``inout``).

    Work-group ``g`` of ``tile`` work-items owns the chunk ``buf[2·tile·g ...]`` of
    2·tile elements; each work-item adds two of them, the work-group sums the partial sums
    in local memory (tree, a barrier per level), and work-item 0 stores the chunk's sum at
    the start of the chunk, ``buf[2·tile·g]`` -- or, with ``in_place_at_group``, at
    ``buf[g]``, inside work-group 0's chunk (a race between work-groups). M = 64 with 8
    work-items: 4 work-groups, and work-groups 1..3 store into ``buf[1..3]``, which
    work-items 1..3 of work-group 0 read.

    Raises:
        ScheduleError: M not positive or a work-group of fewer than 2 work-items.
    """
    m, items = _elements(m), _items(tile, 8)
    M = Param("M")
    buf = GlobalArray("buf", "inout", ("M",))
    partial = LocalArray("partial", (Const(items, "WG_SIZE"),))
    wg = Const(items, "WG_SIZE")
    t, base = Let("t", local_id(0)), Let("base", group_id(0) * (2 * wg))
    tv, bv = t.var, base.var
    levels = []
    half = 1
    while half * 2 <= items:
        half *= 2
    # fold the work-items past the largest power of two first, then halve
    if half != items:
        levels.append(block(If((tv < items - half), (
            store(partial, tv, partial[tv] + partial[tv + half]),)), Barrier()))
    step = half // 2
    while step >= 1:
        levels.append(block(If(tv < step, (store(partial, tv, partial[tv] + partial[tv + step]),)),
                            Barrier()))
        step //= 2
    target = group_id(0) if in_place_at_group else bv
    body = block(
        t, base, DeclareFloat("acc"),
        If(bv + tv < M, (Accumulate("acc", buf[bv + tv]),)),
        If(bv + tv + wg < M, (Accumulate("acc", buf[bv + tv + wg]),)),
        store(partial, tv, S.Private("acc")), Barrier(),
        levels,
        If(tv.eq(0), (store(buf, target, partial[0]),)),
    )
    groups = -(-m // (2 * items))
    name = "demo-reduction" + (":in-place" if in_place_at_group else "")
    return Schedule(name, "reduction_in_place", (("M", m),), (buf,), (partial,), (items,),
                    (groups * items,), body, items,
                    "each work-group sums its chunk of buf and stores the sum back into buf",
                    extra={"reference_function": (
                        functools.partial(reduction_reference, items=items), "buf")})


def reduction_reference(inputs: dict, items: int) -> np.ndarray:
    """What :func:`reduction_demo` is meant to leave in ``buf`` (float64, shape (M,)): each
    chunk of ``2·items`` elements' sum at the chunk's start, the other elements unchanged."""
    buf = np.array(inputs["buf"], dtype=np.float64)
    out = buf.copy()
    for base in range(0, len(buf), 2 * items):
        out[base] = buf[base:base + 2 * items].sum()
    return out


def neighbour_demo(m: int = 64, k: int | None = None, n: int | None = None,
                   tile: int | None = 16, global_fence: bool = True) -> Schedule:
    """``y[i] = x[i]``; barrier; ``z[i] = y[`` the next work-item of the work-group ``]``
    (``y[i]`` where that one is past M).

    Without ``global_fence`` the barrier is ``barrier(CLK_LOCAL_MEM_FENCE)``, which orders
    local memory only: the load of ``y`` races with the neighbour's store (within a
    work-group). M elements, work-groups of ``tile`` work-items, the last one guarded.

    Raises:
        ScheduleError: M not positive or a work-group of fewer than 2 work-items.
    """
    m, items = _elements(m), _items(tile, 16)
    M = Param("M")
    x, y, z = (GlobalArray("x", "in", ("M",)), GlobalArray("y", "out", ("M",)),
               GlobalArray("z", "out", ("M",)))
    wg = Const(items, "WG_SIZE")
    i, t = Let("i", global_id(0)), Let("t", local_id(0))
    j = Let("j", group_id(0) * wg + (t.var + 1) % wg)
    body = block(
        i, t, j,
        If(i.var < M, (store(y, i.var, x[i.var]),)),
        Barrier(global_fence=global_fence),
        If(i.var < M, (If(j.var < M, (store(z, i.var, y[j.var]),),
                          (store(z, i.var, y[i.var]),)),)),
    )
    groups = -(-m // items)
    name = "demo-neighbour" + ("" if global_fence else ":local-fence")
    return Schedule(name, "neighbour", (("M", m),), (x, y, z), (), (items,),
                    (groups * items,), body, items,
                    "each work-item reads, through global memory, what its neighbour stored",
                    extra={"reference_function": (
                        functools.partial(neighbour_reference, items=items), "z")})


def neighbour_reference(inputs: dict, items: int) -> np.ndarray:
    """``z`` of :func:`neighbour_demo` (float64, shape (M,)): ``x`` of the next work-item
    of the work-group, cyclically, or ``x[i]`` where that one is past M."""
    x = np.asarray(inputs["x"], dtype=np.float64)
    i = np.arange(len(x))
    j = i // items * items + (i % items + 1) % items
    return np.where(j < len(x), x[np.minimum(j, len(x) - 1)], x)


def zeros_in_one_launch(sch: Schedule) -> Schedule:
    """``sch`` with the launch number as an extra ``int`` argument
    (:data:`LAUNCH_INDEX_PARAM`, 0 here) and every global store replaced by
    ``if (launch_index == WRONG_LAUNCH) array[i] = 0; else array[i] = value;``."""
    launch = Param(LAUNCH_INDEX_PARAM)

    def fn(s):
        if isinstance(s, S.Store) and isinstance(s.array, GlobalArray):
            return (If(launch.eq(WRONG_LAUNCH), (S.Store(s.array, s.index, S.FConst(0.0)),),
                       (s,)),)
        return None

    return dataclasses.replace(sch, params=sch.params + ((LAUNCH_INDEX_PARAM, 0),),
                               body=rewrite(sch.body, fn))
