"""A correct tiled GEMM of square N×N matrices whose only size parameter is ``N`` (the
style of the HandsOnOpenCL course): 16×16 work-groups, 16×16 tiles of A and B staged in
local memory per step, zero-filled outside the matrices, two barriers per step."""
from tiletraffic import (Accumulate, Barrier, Const, DeclareFloat, For, GlobalArray, If, Let,
                         LocalArray, Param, Schedule, Var, block, ceil_div, global_id,
                         local_id, store)

TS = 16


def make_schedule(n: int = 100) -> Schedule:
    N = Param("N")
    A, B = GlobalArray("A", "in", ("N", "N")), GlobalArray("B", "in", ("N", "N"))
    C = GlobalArray("C", "out", ("N", "N"))
    T = Const(TS, "TS")
    a_tile, b_tile = LocalArray("Awrk", (T, T)), LocalArray("Bwrk", (T, T))
    col, row = Let("col", global_id(0)), Let("row", global_id(1))
    lc, lr = Let("lc", local_id(0)), Let("lr", local_id(1))
    t, kk = Var("t"), Var("kk")
    a_col, b_row = Let("a_col", t * T + lc.var), Let("b_row", t * T + lr.var)
    acc = DeclareFloat("acc")
    stage = (If((row.var < N) & (a_col.var < N),
                (store(a_tile, (lr.var, lc.var), A[row.var, a_col.var]),),
                (store(a_tile, (lr.var, lc.var), 0.0),)),
             If((b_row.var < N) & (col.var < N),
                (store(b_tile, (lr.var, lc.var), B[b_row.var, col.var]),),
                (store(b_tile, (lr.var, lc.var), 0.0),)))
    body = block(col, row, lc, lr, acc,
                 For("t", Const(0), ceil_div(N, T), Const(1), block(
                     a_col, b_row, stage, Barrier(),
                     For("kk", Const(0), T, Const(1),
                         (Accumulate("acc", a_tile[lr.var, kk] * b_tile[kk, lc.var]),)),
                     Barrier())),
                 If((row.var < N) & (col.var < N), (store(C, (row.var, col.var), acc.ref),)))
    size = -(-n // TS) * TS
    return Schedule(family="gemm-n-only", kernel_name="gemm_n_only", params=(("N", n),),
                    arrays=(A, B, C), local_arrays=(a_tile, b_tile), local_size=(TS, TS),
                    global_size=(size, size), body=body, tile=TS,
                    description="tiled GEMM of N x N matrices, one size parameter")


def reference(inputs):
    return inputs["A"] @ inputs["B"]
