"""y = A·x, one work-item per row: the README's smallest complete schedule."""
from tiletraffic import (Accumulate, Const, DeclareFloat, For, GlobalArray, If, Let, Param,
                         Schedule, Var, block, global_id, store)


def make_schedule(m: int, k: int) -> Schedule:
    """y = A·x with A m×k (row-major float32): work-groups of 64 work-items, one per row."""
    M, K = Param("M"), Param("K")
    A, x = GlobalArray("A", "in", ("M", "K")), GlobalArray("x", "in", ("K",))
    y = GlobalArray("y", "out", ("M",))
    row, j, acc = Let("row", global_id(0)), Var("j"), DeclareFloat("acc")
    body = block(row, acc, If(row.var < M, (
        For("j", Const(0), K, Const(1), (Accumulate("acc", A[row.var, j] * x[j]),)),
        store(y, (row.var,), acc.ref))))
    return Schedule(family="row-matvec", kernel_name="row_matvec", body=body,
                    params=(("M", m), ("K", k)), arrays=(A, x, y), local_arrays=(),
                    local_size=(64,), global_size=(-(-m // 64) * 64,), tile=64)


def reference(inputs):
    """The expected y, in float64."""
    return inputs["A"] @ inputs["x"]
