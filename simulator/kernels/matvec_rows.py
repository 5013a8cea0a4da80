"""Matrix-vector product with several work-items per row and the row's partial sums added in
local memory (``matvec-rows-reduce``).

Shapes: A is M×K, x has K elements, y has M; row-major float32. The work-group is
``tile`` × ``wg_rows`` work-items: NDRange dimension 0 along a row (``tile`` work-items
share one row), dimension 1 over rows (``wg_rows`` rows per work-group); global size
(``tile``, ⌈M/wg_rows⌉·wg_rows), rows beyond M guarded.

With ``vec`` = 2 or 4 each work-item reads ``vec`` consecutive elements of A and of x per
step as one vector access (``float4``, or ``vload_half4`` in half storage), steps of
``tile · vec`` columns; the last K mod (``tile · vec``) columns are read one element at a
time. The counts in elements (and FLOPs) are those of ``vec`` = 1; the load instructions
are ``vec`` times fewer, each of ``vec`` elements.

Errors: :class:`ScheduleError` for a size, ``tile`` or ``wg_rows`` that is not a positive
integer, a ``vec`` other than 1, 2 or 4, or K not a multiple of ``vec`` (aligned vector
accesses).
"""
from __future__ import annotations

from tiletraffic.simulator.ir.nodes import (Accumulate, Barrier, Const, DeclareFloat, For, If,
                                            Let, LocalArray, Private, Schedule, ScheduleError,
                                            Var, block, group_id, local_id, store, vload)
from tiletraffic.simulator.kernels.parts import matvec_arrays, positive


def matvec_rows_reduce(m: int, k: int, tile: int = 32, wg_rows: int = 8,
                       vec: int = 1) -> Schedule:
    """Matrix-vector product y = A·x with ``tile`` work-items per row and a local-memory
    reduction.

    A work-group of ``tile`` × ``wg_rows`` work-items (NDRange dimension 0 along a row,
    dimension 1 over rows) computes ``wg_rows`` rows of y: work-item (lx, ly) accumulates
    A[row, k]·x[k] for k = lx, lx + tile, ... (neighbouring work-items read neighbouring
    elements of the row: coalesced), the same number of steps for every work-item (the
    loop stops at ``k_full``, K rounded down to a multiple of ``tile``) and one guarded step
    for the last K mod ``tile`` columns, so that a compiler that unrolls the loop keeps the
    work-items of a sub-group on the same step (a trip count that differs between them
    lets unrolled code read different steps in one instruction), stores its partial sum
    into ``partial[ly][lx]``, and the row's partial sums are added in local memory: first
    the ``tile - P`` work-items above the largest power of two P <= tile are folded in, then
    a tree of log2(P) halving steps, a barrier between steps; work-item 0 of the row stores
    y[row]. Any positive ``tile`` works. The lesson "Matrix Operations", "Matrix-Vector
    Multiplication" (several work-items per row, reduction in local memory).

    Counts: :func:`simulator.kernels.closed_forms.matvec_rows_reduce`.

    ``vec``: elements of A and x per work-item and step, one vector access each (module
    docstring).

    Raises:
        ScheduleError: a size, ``tile`` or ``wg_rows`` that is not a positive integer, a
            ``vec`` other than 1, 2, 4 or K not a multiple of it.
    """
    m, k, tile, wg_rows = (positive(a, v) for a, v in (
        ("M", m), ("K", k), ("tile", tile), ("wg_rows", wg_rows)))
    if vec not in (1, 2, 4) or isinstance(vec, bool):
        raise ScheduleError(f"vec must be 1, 2 or 4 (elements per vector access), got {vec!r}")
    if k % vec:
        raise ScheduleError(f"matvec-rows-reduce with vec = {vec} needs K to be a multiple "
                            f"of {vec} (aligned vector accesses), got K = {k}")
    M, K, A, x, y = matvec_arrays(m, k)
    WPR, RPG = Const(tile, "WG_X"), Const(wg_rows, "WG_Y")
    partial = LocalArray("partial", (RPG, WPR))
    lx, ly = Let("lx", local_id(0)), Let("ly", local_id(1))
    row = Let("row", group_id(1) * RPG + ly.var)
    kk = Var("k")
    acc = DeclareFloat("acc")
    here = (ly.var, lx.var)
    steps = []
    power = 1 << (tile.bit_length() - 1)
    if power != tile:
        steps.append(tile - power)
    s = power // 2
    while s >= 1:
        steps.append(s)
        s //= 2
    reduce = []
    for n_step, s in enumerate(steps):
        offset = power if n_step == 0 and power != tile else s
        reduce.append(If(lx.var < s, (store(partial, here, partial[here] + partial[
            ly.var, lx.var + offset]),)))
        if n_step < len(steps) - 1:
            reduce.append(Barrier())
    if vec == 1:
        k_full = Let("k_full", K - K % WPR)
        tail = k_full.var + lx.var
        products = (
            For("k", lx.var, k_full.var, WPR, (Accumulate("acc", A[row.var, kk] * x[kk]),)),
            If(tail < K, (Accumulate("acc", A[row.var, tail] * x[tail]),)))
        declared = ()
    else:
        k_full, products, declared = _vector_products(A, x, K, WPR, lx, row, vec)
    body = block(
        lx, ly, row, k_full, acc, declared,
        If(row.var < M, products),
        store(partial, here, Private("acc")),
        Barrier(),
        reduce,
        If((lx.var.eq(0)) & (row.var < M), (store(y, row.var, partial[ly.var, Const(0)]),)),
    )
    return Schedule(
        family="matvec-rows-reduce", kernel_name="matvec_rows_reduce",
        params=(("M", m), ("K", k)), arrays=(A, x, y), local_arrays=(partial,),
        local_size=(tile, wg_rows), global_size=(tile, -(-m // wg_rows) * wg_rows),
        body=body, tile=tile,
        description=(f"{tile} work-items per row, {wg_rows} rows per work-group, partial "
                     "sums added in local memory"
                     + (f", {vec} elements per vector access" if vec > 1 else "")),
        extra={"wg_rows": wg_rows, "reduction_steps": len(steps),
               **({"vec": vec} if vec > 1 else {})},
    )


def _vector_products(A, x, K, WPR, lx, row, vec: int):
    """``(k_full, statements, declarations)`` of the vectorized steps: ``vec`` elements of
    A and x per work-item and step (steps of ``tile · vec`` columns up to ``k_full``), then
    the rest one element per work-item and step."""
    VEC = Const(vec, "VEC")
    k_full = Let("k_full", K - K % (WPR * VEC))
    kk = Var("k")
    a_names = tuple(f"a_{i}" for i in range(vec))
    x_names = tuple(f"x_{i}" for i in range(vec))
    declared = tuple(DeclareFloat(n) for n in a_names + x_names)
    step = (vload(a_names, A, (row.var, kk)), vload(x_names, x, kk),
            *(Accumulate("acc", Private(a) * Private(b)) for a, b in zip(a_names, x_names)))
    products = (
        For("k", lx.var * VEC, k_full.var, WPR * VEC, step),
        For("kt", k_full.var + lx.var, K, WPR,
            (Accumulate("acc", A[row.var, Var("kt")] * x[Var("kt")]),)))
    return k_full, products, declared
