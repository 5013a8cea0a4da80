"""Batched GEMM: one launch computing ``batch`` independent products C[b] = A[b]·B[b].

A batched schedule is the family's single-product schedule with a third NDRange dimension
of ``batch`` work-groups (one work-item deep): the work-group id in dimension 2 selects the
matrix. Every global array gains a leading dimension ``BATCH`` (the runtime ``int``
argument ``BATCH``): A is BATCH×M×K, B is BATCH×K×N, C is BATCH×M×N, row-major float32, so
matrix b starts ``b·M·K`` (A), ``b·K·N`` (B), ``b·M·N`` (C) elements into its buffer. With
``shared_b`` the batch shares one K×N B (the weights of a layer applied to a batch of
inputs): B keeps its shape and every work-group of every matrix reads it.

Every access to a global array ``X[i, j]`` becomes ``X[group_id(2), i, j]``; nothing else
changes, so each matrix's work-groups execute exactly the statements of the single product:
every count (loads, stores, requests, sectors, local accesses, barriers, FLOPs) of the
batched launch is ``batch`` times the single product's, shared B included (each matrix's
work-groups still load B; only the distinct bytes of B, what DRAM must deliver at least,
shrink from ``batch·K·N`` to ``K·N`` floats).

A batch of 1 is the single product itself (the same schedule, two NDRange dimensions).

``gemm-split-k`` already runs its slices of K along NDRange dimension 2; its slice kernel
folds the batch into that dimension (``get_group_id(2) = b·S + s``) and its reduction
kernel takes the batch as dimension 2.

Errors: :class:`~simulator.ir.nodes.ScheduleError` for a batch that is not a positive
integer, ``shared_b`` that is not a bool or is set for a batch of 1, a schedule without the arrays A, B and C, or a
batched buffer beyond the 32-bit ``int`` index range.
"""
from __future__ import annotations

import dataclasses

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.nodes import ScheduleError
from tiletraffic.simulator.ir.sequence import is_sequence
from tiletraffic.simulator.ir.visitor import Rebuilder
from tiletraffic.simulator.kernels.parts import fits_int32, positive

BATCH_PARAM = "BATCH"
"""The runtime ``int`` argument holding the batch count, the leading extent of batched
buffers."""

SHARED_ARRAY = "B"
"""The array shared across the batch with ``shared_b``."""

_ACCESSES = (S.Load, S.Store, S.VectorLoad, S.VectorStore)


def batch_of(schedule) -> int:
    """The batch count of a schedule or kernel sequence (1 for a single product)."""
    return int(schedule.extra.get("batch", 1))


def shares_b(schedule) -> bool:
    """Whether a batched schedule shares one B across its batch."""
    return bool(schedule.extra.get("shared_b", False))


def batch_fields(schedule) -> dict:
    """``{"batch": P, "shared_b": bool}`` of a batched schedule or sequence, for results;
    ``{}`` for a single product."""
    return {key: schedule.extra[key] for key in ("batch", "shared_b") if key in schedule.extra}


def check_batch(batch, shared_b) -> tuple[int, bool]:
    """``(batch, shared_b)`` checked.

    Raises:
        ScheduleError: a batch that is not a positive integer, ``shared_b`` not a bool.
    """
    batch = positive("batch", batch)
    if not isinstance(shared_b, bool):
        raise ScheduleError(f"shared_b must be true or false, got {shared_b!r}")
    return batch, shared_b


def batched(schedule, batch: int, shared_b: bool = False):
    """``schedule`` (a GEMM :class:`~simulator.ir.nodes.Schedule` or a
    :class:`~simulator.ir.sequence.KernelSequence`) computing ``batch`` products in one
    launch (module docstring); ``schedule`` itself for ``batch == 1``.

    Raises:
        ScheduleError: see the module docstring.
    """
    batch, shared_b = check_batch(batch, shared_b)
    if batch == 1:
        if shared_b:
            raise ScheduleError("shared_b applies to a batch of 2 or more products, got "
                                "batch = 1")
        return schedule
    names = [a.name for a in schedule.arrays]
    if not {"A", "B", "C"} <= set(names):
        raise ScheduleError(f"{schedule.family}: a batch applies to C = A·B (arrays A, B and "
                            f"C), not to arrays {', '.join(names)}")
    if not is_sequence(schedule):
        return _batched_kernel(schedule, batch, shared_b)
    arrays = {a.name: _batched_array(a, shared_b) for a in schedule.arrays + schedule.scratch}
    kernels = tuple(_batched_kernel(k, batch, shared_b) for k in schedule.kernels)
    return dataclasses.replace(
        schedule, kernels=kernels,
        arrays=tuple(arrays[a.name] for a in schedule.arrays),
        scratch=tuple(arrays[a.name] for a in schedule.scratch),
        description=_description(schedule.description, batch, shared_b),
        extra={**schedule.extra, "batch": batch, "shared_b": shared_b})


def _description(text: str, batch: int, shared_b: bool) -> str:
    shared = ", one B shared by all" if shared_b else ""
    return f"{text}; a batch of {batch} products{shared}"


def _batched_array(array: S.GlobalArray, shared_b: bool) -> S.GlobalArray:
    if shared_b and array.name == SHARED_ARRAY:
        return array
    return dataclasses.replace(array, shape=(BATCH_PARAM,) + tuple(array.shape))


def _batched_kernel(schedule: S.Schedule, batch: int, shared_b: bool) -> S.Schedule:
    """One kernel with the batch as NDRange dimension 2 (folded into it where the kernel
    already has three dimensions); its arrays keep their roles in it."""
    arrays = {a.name: _batched_array(a, shared_b) for a in schedule.arrays}
    params = dict(schedule.params)
    for a in schedule.arrays:
        if a.shape[:1] == (BATCH_PARAM,) or BATCH_PARAM in params:
            raise ScheduleError(f"{schedule.family}: already batched")
        if arrays[a.name].shape[0] == BATCH_PARAM:
            size = batch
            for d in a.shape:
                size *= params[d]
            fits_int32(f"{BATCH_PARAM}*{'*'.join(a.shape)} of {a.name}", size)
    dims = len(schedule.global_size)
    if dims == 3:       # the slices of split-K: dimension 2 holds b·S + s
        slices = schedule.num_groups[2]
        index = S.group_id(2) // S.Const(slices, "SLICES")
        within = {"group": S.group_id(2) % S.Const(slices, "SLICES"),
                  "global": S.group_id(2) % S.Const(slices, "SLICES") * schedule.local_size[2]
                  + S.local_id(2)}
        global_size = schedule.global_size[:2] + (schedule.global_size[2] * batch,)
        local_size = schedule.local_size
        folded = {"folded_batch": True}
    elif dims == 2:
        index, within, folded = S.group_id(2), {}, {}
        global_size = tuple(schedule.global_size) + (batch,)
        local_size = tuple(schedule.local_size) + (1,)
    else:
        raise ScheduleError(f"{schedule.family}: a batch needs a 2-dimensional NDRange, "
                            f"got {dims} dimension(s)")
    rebuild = _Rebuild(arrays, index, within)
    body = tuple(rebuild(s) for s in schedule.body)
    return dataclasses.replace(
        schedule, params=schedule.params + ((BATCH_PARAM, batch),),
        arrays=tuple(arrays[a.name] for a in schedule.arrays), body=body,
        global_size=global_size, local_size=local_size,
        description=_description(schedule.description, batch, shared_b),
        extra={**schedule.extra, "batch": batch, "shared_b": shared_b, **folded})


class _Rebuild(Rebuilder):
    """The IR rebuilt with every global access indexed by the batch first (arrays of
    ``arrays`` by name; an array not batched keeps its index); ``within`` replaces the ids
    of NDRange dimension 2 (kind -> expression) where the batch is folded into it."""

    def __init__(self, arrays: dict, index: S.IntExpr, within: dict):
        super().__init__()
        self.arrays, self.index, self.within = arrays, index, within

    def leaf(self, node):
        if isinstance(node, S.GlobalArray):
            return self.arrays.get(node.name, node)
        if isinstance(node, (S.LocalArray, S.PrivateArray)):
            return node
        if isinstance(node, S.WorkItemId) and node.dim == 2 and self.within:
            return node if node.kind == "local" else self.within[node.kind]
        return None

    def changed(self, node, changes: dict) -> dict:
        if isinstance(node, _ACCESSES) and isinstance(node.array, S.GlobalArray):
            array = self.arrays.get(node.array.name, node.array)
            if array.shape[:1] == (BATCH_PARAM,):
                changes["index"] = (self.index,) + tuple(changes.get("index", node.index))
        return changes
