"""A GEMM in fixed 32×32 blocks whose flat write-back is unguarded.

Each work-item of a 32×32 work-group computes one element of C (its loads guarded by
``row < M and col < N``), then stores ``C[row * N + col]`` into C declared as one flat
buffer of M·N floats with no guard: for M, N not multiples of 32 the work-items beyond the
matrix store past its end (out of bounds) or, for ``col >= N``, into the next row, where
another work-item stores too (the shape of Hands-on-GEMM issue 8; PoCL reports a corrupted
heap after such a run).
"""
from tiletraffic import (Accumulate, Const, DeclareFloat, For, GlobalArray, If, Let, Param,
                         Schedule, Var, block, global_id, store)

BLOCK = 32


def make_schedule(m: int = 40, k: int = 24, n: int = 40) -> Schedule:
    M, K, N = Param("M"), Param("K"), Param("N")
    A = GlobalArray("A", "in", ("M", "K"))
    B = GlobalArray("B", "in", ("K", "N"))
    C = GlobalArray("C", "out", ("MN",))
    col, row = Let("col", global_id(0)), Let("row", global_id(1))
    acc = DeclareFloat("acc")
    kk = Var("kk")
    body = block(
        col, row, acc,
        If((row.var < M) & (col.var < N), (
            For("kk", Const(0), K, Const(1),
                (Accumulate("acc", A[row.var, kk] * B[kk, col.var]),)),)),
        store(C, (row.var * N + col.var,), acc.ref))   # the fault: no guard
    up = lambda v: -(-v // BLOCK) * BLOCK  # noqa: E731
    return Schedule(family="fixed-block-unguarded", kernel_name="fixed_block_unguarded",
                    params=(("M", m), ("K", k), ("N", n), ("MN", m * n)), arrays=(A, B, C),
                    local_arrays=(), local_size=(BLOCK, BLOCK), global_size=(up(n), up(m)),
                    body=body, tile=BLOCK, description="32x32 blocks, unguarded flat store")


def reference(inputs):
    return (inputs["A"] @ inputs["B"]).reshape(-1)
