"""Tutorial: a rectangular-tile GEMM written from scratch with tiletraffic's IR.

C = A·B with A M×K, B K×N, C M×N, all row-major float32, any positive M, K, N.

- Work-group 16×8: 16 work-items along NDRange dimension 0 (columns of C), 8 along
  dimension 1 (rows of C); each work-group computes one 8×16 tile of C.
- Per K-step of 8: the work-group stages an 8×8 tile of A (by the 64 work-items with local
  column < 8) and an 8×16 tile of B (one element per work-item) in local memory, zero-filled
  outside the matrices; barrier; 8 multiply-adds from local memory; barrier.

Use it by path from every command, for instance::

    tiletraffic simulate examples/rect_tile_gemm.py:make_schedule --m 20 --k 20 --n 40

``closed_form(m, k, n)`` holds the counts derived by hand in docs/tutorial.md (``simulate``
shows them beside the simulated counts, ``tiletraffic.closed_form`` returns them);
``reference`` is the numpy result the simulated and the OpenCL results are checked against.
"""
from __future__ import annotations

from tiletraffic import (Accumulate, Barrier, Const, DeclareFloat, For, GlobalArray, If, Let,
                         LocalArray, Param, Schedule, Var, block, ceil_div, global_id,
                         local_id, store)

TILE_COLS = 16  # work-items along dimension 0: columns of the C tile
TILE_ROWS = 8   # work-items along dimension 1: rows of the C tile
K_TILE = 8      # elements of K staged per step


def make_schedule(m: int, k: int, n: int) -> Schedule:
    """The rectangular-tile GEMM for A (m×k) times B (k×n).

    Raises:
        ValueError: a size that is not a positive integer.
    """
    for name, value in (("m", m), ("k", k), ("n", n)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    M, K, N = Param("M"), Param("K"), Param("N")
    A = GlobalArray("A", "in", ("M", "K"))
    B = GlobalArray("B", "in", ("K", "N"))
    C = GlobalArray("C", "out", ("M", "N"))
    TC, TR = Const(TILE_COLS, "TILE_COLS"), Const(TILE_ROWS, "TILE_ROWS")
    TK = Const(K_TILE, "K_TILE")
    tile_a = LocalArray("tile_A", (TR, TK))   # 8×8: rows of C × K-step
    tile_b = LocalArray("tile_B", (TK, TC))   # 8×16: K-step × columns of C

    col, row = Let("col", global_id(0)), Let("row", global_id(1))
    lc, lr = Let("lc", local_id(0)), Let("lr", local_id(1))
    c, r, lcv, lrv = col.var, row.var, lc.var, lr.var
    step, kk = Var("t"), Var("kk")
    a_col = Let("a_col", step * TK + lcv)     # column of A this work-item stages (lc < 8)
    b_row = Let("b_row", step * TK + lrv)     # row of B this work-item stages
    acc = DeclareFloat("acc")

    # 64 of the 128 work-items stage A; all 128 stage B; zero fill outside the matrices
    stage_a = If(lcv < TK, (If((r < M) & (a_col.var < K),
                               (store(tile_a, (lrv, lcv), A[r, a_col.var]),),
                               (store(tile_a, (lrv, lcv), 0.0),)),))
    stage_b = If((b_row.var < K) & (c < N), (store(tile_b, (lrv, lcv), B[b_row.var, c]),),
                 (store(tile_b, (lrv, lcv), 0.0),))
    compute = For("kk", Const(0), TK, Const(1),
                  (Accumulate("acc", tile_a[lrv, kk] * tile_b[kk, lcv]),))
    body = block(col, row, lc, lr, acc,
                 For("t", Const(0), ceil_div(K, TK), Const(1), block(
                     a_col, b_row, stage_a, stage_b, Barrier(), compute, Barrier())),
                 If((r < M) & (c < N), (store(C, (r, c), acc.ref),)))
    return Schedule(
        family="rect-tile-gemm", kernel_name="rect_tile_gemm",
        params=(("M", m), ("K", k), ("N", n)), arrays=(A, B, C),
        local_arrays=(tile_a, tile_b),
        local_size=(TILE_COLS, TILE_ROWS),
        global_size=(-(-n // TILE_COLS) * TILE_COLS, -(-m // TILE_ROWS) * TILE_ROWS),
        body=body, tile=K_TILE,
        description="8x16 tiles of C; 8x8 of A and 8x16 of B staged per K-step of 8",
    )


def reference(inputs):
    """The expected C: float64 A @ B (inputs in their logical shapes, float64)."""
    return inputs["A"] @ inputs["B"]


def closed_form(m: int, k: int, n: int) -> dict[str, int]:
    """The counts derived by hand (docs/tutorial.md, "Closed forms by hand").

    With groups = ⌈N/16⌉·⌈M/8⌉ work-groups of 128 work-items and steps = ⌈K/8⌉ K-steps:
    A is loaded M·K·⌈N/16⌉ times (each in-range element once per column of work-groups),
    B K·N·⌈M/8⌉ times; per work-group and step 64 + 128 local stores, 128·16 local loads,
    128·16 FLOP and 2 barriers.
    """
    cd = lambda a, b: -(-a // b)  # noqa: E731 - ceiling division
    groups, steps = cd(n, TILE_COLS) * cd(m, TILE_ROWS), cd(k, K_TILE)
    items = TILE_COLS * TILE_ROWS
    loads = {"A": m * k * cd(n, TILE_COLS), "B": k * n * cd(m, TILE_ROWS), "C": 0}
    return {
        "global_load_elems": loads["A"] + loads["B"],
        "global_store_elems": m * n,
        "global_load_bytes": 4 * (loads["A"] + loads["B"]),
        "global_store_bytes": 4 * m * n,
        "local_load_elems": groups * steps * items * 2 * K_TILE,
        "local_store_elems": groups * steps * (TILE_ROWS * K_TILE + K_TILE * TILE_COLS),
        "barriers": groups * 2 * steps,
        "flop": groups * steps * items * 2 * K_TILE,
        "work_groups": groups,
        "global_load_elems_by_buffer": loads,
        "global_store_elems_by_buffer": {"A": 0, "B": 0, "C": m * n},
        "global_load_elems_per_tile": k * (min(TILE_ROWS, m) + min(TILE_COLS, n)),
    }
